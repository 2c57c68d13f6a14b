// Package mcpserve serves tools over MCP on the official Go SDK, behind one
// validating gate: stdio (RunStdio) and streamable HTTP (Handler), every
// revision the SDK speaks, the stateless one included. cua-bridge serves
// its tools with it and cua-spacesd its built-in service: the error codes,
// the revisions, the session bounds and the result envelope are the same
// on both, because they are this code.
//
// Who may call is the program's business: the bridge and the daemon each
// put their own auth in front of Handler.
package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config builds a Server.
type Config struct {
	// Name and Version name the server in initialize.
	Name, Version string
	// Instructions are the server's instructions to the model.
	Instructions string
	Tools        []*Tool
	Logger       *slog.Logger
}

// Server is an SDK server over the tools, with its gate.
type Server struct {
	server *sdk.Server
	gate   *Gate
	log    *slog.Logger
	tools  []*Tool
	byName map[string]*Tool
}

// New registers every tool with a new SDK server.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{log: cfg.Logger, tools: cfg.Tools, byName: map[string]*Tool{}}
	impl := &sdk.Implementation{Name: cfg.Name, Version: cfg.Version}
	s.server = sdk.NewServer(impl, &sdk.ServerOptions{
		SupportedProtocolVersions: ProtocolVersions,
		Instructions:              cfg.Instructions,
	})
	schemas := map[string]*jsonschema.Schema{}
	for _, t := range cfg.Tools {
		if _, dup := s.byName[t.Name]; dup {
			return nil, errors.New("mcpserve: the tool " + t.Name + " is given twice")
		}
		s.byName[t.Name] = t
		schemas[t.Name] = t.Schema
		s.server.AddTool(Describe(t), s.handler(t))
	}
	g, err := NewGate(impl, schemas)
	if err != nil {
		return nil, err
	}
	s.gate = g
	return s, nil
}

// Describe is how tools/list shows a tool: its schemas, title and hints.
func Describe(t *Tool) *sdk.Tool {
	destructive, openWorld := t.Hints.Destructive, t.Hints.OpenWorld
	st := &sdk.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: t.Schema,
		Annotations: &sdk.ToolAnnotations{
			Title:           t.Title,
			ReadOnlyHint:    t.Hints.ReadOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.Hints.Idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
	if t.Output != nil {
		st.OutputSchema = OutputSchema(t)
	}
	return st
}

// Gate is the server's validating gate.
func (s *Server) Gate() *Gate { return s.gate }

// Tools lists the served tools, in the order given.
func (s *Server) Tools() []*Tool { return slices.Clone(s.tools) }

// handler adapts one tool to the SDK: progress, the error envelope, and one
// log line per call (never arguments or tokens).
func (s *Server) handler(t *Tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		c := &Call{Args: req.Params.Arguments, Progress: noProgress}
		if p := progressFunc(ctx, req); p != nil {
			c.Progress, c.ProgressAsked = p, true
		}
		if req.Extra != nil {
			c.Header = req.Extra.Header
			c.Caller = callerOf(req.Extra.TokenInfo)
		}
		return s.run(ctx, t, c), nil
	}
}

// run runs one call of t and logs it.
func (s *Server) run(ctx context.Context, t *Tool, c *Call) *sdk.CallToolResult {
	if len(c.Args) == 0 || string(c.Args) == "null" {
		c.Args = json.RawMessage(`{}`)
	}
	start := time.Now()
	res, err := t.Run(ctx, c)
	out := toResult(res, err)
	status := "ok"
	if out.IsError {
		status = errorKindOf(out)
	}
	attrs := append([]slog.Attr{slog.String("tool", t.Name)}, c.LogAttrs...)
	attrs = append(attrs, slog.String("status", status),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
	s.log.LogAttrs(ctx, slog.LevelInfo, "tool call", attrs...)
	return out
}

// progressFunc sends notifications/progress when the call carried a
// progressToken, or answers nil. It sends each one: a tool that reports
// often spaces its reports itself, and one passing on another server's
// passes them on as they came.
func progressFunc(ctx context.Context, req *sdk.CallToolRequest) func(done, total float64, msg string) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	return func(done, total float64, msg string) {
		p := &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: done, Message: msg}
		if total > 0 {
			p.Total = total
		}
		_ = req.Session.NotifyProgress(ctx, p)
	}
}
