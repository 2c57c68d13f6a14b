package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/mcp/mcpclient"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// daemonConnectTimeout bounds the MCP handshake with a Space's daemon (one
// round trip on a healthy link); the call itself is bounded by its caller.
const daemonConnectTimeout = 30 * time.Second

// daemonServices reach a Space's MCP services through its daemon's /mcp:
// the bridge's list_tools and call_tool call the daemon's tools of the same
// names, and pass their results on as they came. Progress and cancellation
// cross the hop with the call. The session is the Space's, kept across
// calls (daemonSessions) under key, the Space's URL and token.
type daemonServices struct {
	c        *client.Client
	key      string
	sessions *daemonSessions
}

// call calls one tool of the daemon's built-in service over the Space's
// session.
func (d daemonServices) call(ctx context.Context, tool string, args any, progress func(mcpclient.Progress)) (json.RawMessage, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "%s: arguments: %v", tool, err)
	}
	connect := func(ctx context.Context) (*mcpclient.Session, error) {
		return mcpclient.ConnectHTTP(ctx, d.c.MCPEndpoint(), d.c.MCPHTTPClient(), mcpclient.Options{ClientName: "cua-bridge", ClientVersion: "1"})
	}
	raw, err := d.sessions.do(ctx, d.key, connect, func(s *mcpclient.Session) (json.RawMessage, error) {
		return s.CallTool(ctx, tool, b, progress)
	})
	if err != nil {
		return nil, daemonError(ctx, d.c, err)
	}
	return raw, nil
}

// daemonError says what failed on the way to the daemon's MCP service.
func daemonError(ctx context.Context, c *client.Client, err error) error {
	switch {
	case ctx.Err() != nil:
		return api.Errorf(api.KindCancelled, "MCP call to %s cancelled: %v", c.BaseURL(), ctx.Err())
	case errors.Is(err, errSessionsClosed):
		return api.Errorf(api.KindSpacesdNotAvailable, "MCP call to %s: %v", c.BaseURL(), err).WithRetryable(true)
	}
	return api.Errorf(api.KindMCP, "the MCP endpoint of %s: %v", c.MCPEndpoint(), err)
}

func (d daemonServices) ListTools(ctx context.Context, service, name string) (*spacetools.ToolList, error) {
	raw, err := d.call(ctx, "list_tools", map[string]string{"service": service, "name": name}, nil)
	if err != nil {
		return nil, err
	}
	var res mcpserve.RawResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, api.Errorf(api.KindMCP, "list_tools of %s: %v", d.c.BaseURL(), err)
	}
	if res.IsError {
		return nil, envelopeError(res, "list_tools")
	}
	var list spacetools.ToolList
	if err := json.Unmarshal(res.StructuredContent, &list); err != nil {
		return nil, api.Errorf(api.KindMCP, "list_tools of %s: structured result: %v", d.c.BaseURL(), err)
	}
	return &list, nil
}

func (d daemonServices) CallTool(ctx context.Context, call spacetools.ToolCall) (json.RawMessage, error) {
	var progress func(mcpclient.Progress)
	if call.Progress != nil {
		progress = func(p mcpclient.Progress) { call.Progress(p.Progress, p.Total, p.Message) }
	}
	// The daemon's answer is passed on whole, its tool errors included: a
	// failing service's kind mcp is the daemon's to give.
	return d.call(ctx, "call_tool", map[string]any{"service": call.Service, "tool": call.Tool, "arguments": call.Arguments}, progress)
}

// envelopeError is the error a daemon's tool answered, with its kind.
func envelopeError(res mcpserve.RawResult, tool string) error {
	var env mcpserve.ErrorEnvelope
	if json.Unmarshal(res.StructuredContent, &env) != nil || env.Error.Kind == "" {
		return api.Errorf(api.KindMCP, "%s failed without an error envelope", tool)
	}
	e := api.Errorf(api.Kind(env.Error.Kind), "%s", env.Error.Message)
	if env.Error.Hint != "" {
		e = e.WithHint(env.Error.Hint)
	}
	return e
}
