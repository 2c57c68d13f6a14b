package mcpsvc

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpclient"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// callToolName is the tool call_tool, which does not call itself.
const callToolName = "call_tool"

// registry holds the daemon's MCP services: the built-in one (the daemon's
// own MCP server) and the declared ones.
type registry struct {
	builtin  *mcpserve.Server
	declared map[string]*supervisor
	names    []string // declared, sorted
}

// forCall is the registry as one call of list_tools or call_tool sees it:
// a call of a built-in tool runs with that call's credentials.
func (r *registry) forCall(mc *mcpserve.Call) spacetools.Services { return callServices{r, mc} }

type callServices struct {
	r  *registry
	mc *mcpserve.Call
}

func (r *registry) infos() []spacetools.ServiceInfo {
	out := []spacetools.ServiceInfo{{Name: spacetools.BuiltinService, Transport: "builtin", State: stateRunning}}
	for _, n := range r.names {
		out = append(out, r.declared[n].info())
	}
	return out
}

func (r *registry) service(name string) (*supervisor, error) {
	if s, ok := r.declared[name]; ok {
		return s, nil
	}
	all := append([]string{spacetools.BuiltinService}, r.names...)
	return nil, api.Errorf(api.KindNotFound, "no MCP service %q in this Space; there are: %s", name, strings.Join(all, ", ")).
		WithHint("the image declares its services in the file given to cua-spacesd serve --mcp-config")
}

func (c callServices) ListTools(ctx context.Context, service, name string) (*spacetools.ToolList, error) {
	var raws []json.RawMessage
	if service == spacetools.BuiltinService {
		for _, t := range c.r.builtin.Tools() {
			b, err := json.Marshal(mcpserve.Describe(t))
			if err != nil {
				return nil, api.Errorf(api.KindJSON, "describe %s: %v", t.Name, err)
			}
			raws = append(raws, b)
		}
	} else {
		s, err := c.r.service(service)
		if err != nil {
			return nil, err
		}
		if _, err := s.call(ctx, "tools/list", func(sess *mcpclient.Session) (json.RawMessage, error) {
			raws, err = sess.ListTools(ctx)
			return nil, err
		}); err != nil {
			return nil, err
		}
	}
	list := &spacetools.ToolList{Service: service, Tools: []spacetools.ToolInfo{}, Services: c.r.infos()}
	for _, raw := range raws {
		var t spacetools.ToolInfo
		if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
			return nil, api.Errorf(api.KindMCP, "MCP service %s lists a tool that is not one: %.200s", service, raw)
		}
		if name != "" && !strings.Contains(t.Name, name) {
			continue
		}
		if name == "" {
			// The schemas of every tool would not fit a model's context;
			// asking by name brings them.
			t.InputSchema, t.OutputSchema = nil, nil
		}
		list.Tools = append(list.Tools, t)
	}
	sort.Slice(list.Tools, func(i, j int) bool { return list.Tools[i].Name < list.Tools[j].Name })
	list.Count = len(list.Tools)
	return list, nil
}

func (c callServices) CallTool(ctx context.Context, call spacetools.ToolCall) (json.RawMessage, error) {
	if call.Service == spacetools.BuiltinService {
		if call.Tool == callToolName {
			// One call_tool inside another gains nothing, and a chain of
			// them is a recursion as deep as its arguments nest.
			return nil, api.Errorf(api.KindInvalidArgument, "call_tool does not call itself: call %s's tools directly", spacetools.BuiltinService)
		}
		mc := &mcpserve.Call{Args: call.Arguments, Progress: call.Progress, ProgressAsked: call.Progress != nil, Header: c.mc.Header, Caller: c.mc.Caller}
		return c.r.builtin.CallTool(ctx, call.Tool, mc)
	}
	s, err := c.r.service(call.Service)
	if err != nil {
		return nil, err
	}
	var progress func(mcpclient.Progress)
	if call.Progress != nil {
		progress = func(p mcpclient.Progress) { call.Progress(p.Progress, p.Total, p.Message) }
	}
	raw, err := s.call(ctx, "tools/call "+call.Tool, func(sess *mcpclient.Session) (json.RawMessage, error) {
		return sess.CallTool(ctx, call.Tool, call.Arguments, progress)
	})
	if err != nil {
		return nil, err
	}
	// What is passed on must be a tools/call result; anything else is the
	// service's failure, not a result to hand the caller.
	var probe mcpserve.RawResult
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, s.mcpError("tools/call %s answered what is not a tool result: %v", call.Tool, err)
	}
	return raw, nil
}

func (r *registry) close() {
	for _, n := range r.names {
		r.declared[n].close()
	}
}
