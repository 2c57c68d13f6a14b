package spacetools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// BuiltinService is the name of cua-spacesd's own MCP service: these tools,
// served by the daemon over itself.
const BuiltinService = "spacesd"

// Services are a Space's MCP services: the built-in one and those its image
// declares. The daemon implements them; the bridge reaches the daemon's.
type Services interface {
	// ListTools lists the tools of a service (those whose name contains
	// name, with their schemas, when name is not "") and every service.
	ListTools(ctx context.Context, service, name string) (*ToolList, error)
	// CallTool calls a tool of a service and answers its tools/call result
	// as the service sent it. A service that fails answers kind mcp.
	CallTool(ctx context.Context, call ToolCall) (json.RawMessage, error)
}

// ToolCall is one call_tool.
type ToolCall struct {
	Service, Tool string
	// Arguments are the tool's arguments (a JSON object).
	Arguments json.RawMessage
	// Progress receives the service's progress notifications; nil asks the
	// service for none.
	Progress func(done, total float64, message string)
}

// ToolList is the structured answer of list_tools.
type ToolList struct {
	Service  string        `json:"service"`
	Count    int           `json:"count"`
	Tools    []ToolInfo    `json:"tools"`
	Services []ServiceInfo `json:"services"`
}

// ToolInfo is one tool of a service as list_tools shows it. The schemas
// come only when list_tools was given a name: a full listing of a big
// service would not fit a model's context.
type ToolInfo struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
	Annotations  map[string]any `json:"annotations,omitempty"`
	InputSchema  map[string]any `json:"inputSchema,omitempty"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
}

// ServiceInfo is one MCP service of a Space.
type ServiceInfo struct {
	Name string `json:"name"`
	// Transport is "builtin", "stdio" or "http".
	Transport string `json:"transport"`
	// State is "running", "stopped" (not started, or idle), "starting",
	// or "failed" (its last start or run failed; Error says how).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Restarts counts the times it was started again after a crash.
	Restarts int `json:"restarts,omitempty"`
}

// serviceArg is the service argument of list_tools and call_tool.
func serviceArg() *jsonschema.Schema {
	s := Str("The MCP service in the Space: " + BuiltinService + " (the daemon's own tools) or one its image declares (list_tools lists them).")
	s.Default = mustJSON(BuiltinService)
	return s
}

func listToolsTool() *Tool {
	return &Tool{
		Name:   "list_tools",
		Title:  "List a Space's MCP tools",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: OutputOf[ToolList](),
		Description: "List the tools of an MCP service inside a Space (the daemon's own, " + BuiltinService +
			", or one the Space's image declares), and the services there are. With name, only the tools whose name contains it, each with its full input schema.",
		Schema: Object(nil, map[string]*jsonschema.Schema{
			"service": serviceArg(),
			"name":    Str("Only tools whose name contains this; their input schemas come too."),
		}),
		Requires: []api.Feature{api.FeatureMCP},
		Errors:   []api.Kind{api.KindMCP},
		Result:   "{service, count, tools: [{name, title?, description?, annotations?, inputSchema? (with name)}], services: [{name, transport, state, error?, restarts?}]}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Service string `json:"service"`
				Name    string `json:"name"`
			}
			if err := Decode(c, "list_tools", &a); err != nil {
				return nil, err
			}
			if a.Service == "" {
				a.Service = BuiltinService
			}
			list, err := c.Space.Services.ListTools(ctx, a.Service, a.Name)
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: list.text(a.Name != ""), Structured: list}, nil
		},
	}
}

// text is the listing as a model reads it: one line a tool, the schemas
// when they were asked for, then the services.
func (l *ToolList) text(schemas bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "service %s: %d tools\n", l.Service, l.Count)
	for _, t := range l.Tools {
		fmt.Fprintf(&b, "- %s", t.Name)
		if t.Description != "" {
			fmt.Fprintf(&b, ": %s", t.Description)
		}
		b.WriteByte('\n')
		if schemas && t.InputSchema != nil {
			s, _ := json.Marshal(t.InputSchema)
			fmt.Fprintf(&b, "  inputSchema: %s\n", s)
		}
	}
	b.WriteString("services:")
	for i, s := range l.Services {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s (%s, %s", sep, s.Name, s.Transport, s.State)
		if s.Error != "" {
			fmt.Fprintf(&b, ": %s", s.Error)
		}
		b.WriteByte(')')
	}
	return b.String()
}

func callToolTool() *Tool {
	return &Tool{
		Name:  "call_tool",
		Title: "Call a Space's MCP tool",
		// What the called tool does is unknown here: assume the worst.
		Hints:   mcpserve.Hints{Destructive: true, OpenWorld: true},
		Keyless: true,
		Description: "Call a tool of an MCP service inside a Space (list_tools names them) and answer its result as the service gave it: " +
			"every content part (text, image, audio, resource), structuredContent and isError. Progress is passed on when the call " +
			"carries a progressToken; cancelling the call cancels it in the service.",
		Schema: Object([]string{"tool"}, map[string]*jsonschema.Schema{
			"tool":      NonEmpty("The tool's name in the service."),
			"arguments": {Type: "object", Description: "The tool's arguments.", Default: mustJSON(map[string]any{})},
			"service":   serviceArg(),
		}),
		Requires: []api.Feature{api.FeatureMCP},
		Errors:   []api.Kind{api.KindMCP, api.KindNotFound},
		Result:   "the service's own result, unchanged: content parts, structuredContent, isError",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Tool      string          `json:"tool"`
				Arguments json.RawMessage `json:"arguments"`
				Service   string          `json:"service"`
			}
			if err := Decode(c, "call_tool", &a); err != nil {
				return nil, err
			}
			if a.Service == "" {
				a.Service = BuiltinService
			}
			if len(a.Arguments) == 0 || string(a.Arguments) == "null" {
				a.Arguments = json.RawMessage(`{}`)
			}
			call := ToolCall{Service: a.Service, Tool: a.Tool, Arguments: a.Arguments}
			if c.ProgressAsked {
				call.Progress = c.Progress
			}
			raw, err := c.Space.Services.CallTool(ctx, call)
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Raw: raw}, nil
		},
	}
}
