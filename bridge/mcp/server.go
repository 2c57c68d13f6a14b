// Package mcp serves the bridge's tools over MCP, on the official Go SDK:
// stdio (cua-bridge mcp) and streamable HTTP (cua-bridge serve). One gate
// validates every message before the SDK sees it, on both transports.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/tools"
)

// progressInterval spaces progress notifications: enough to draw a bar,
// few enough that a 1 GiB transfer does not send thousands.
const progressInterval = 100 * time.Millisecond

// ServerName is the name the bridge gives in initialize.
const ServerName = "cua-bridge"

// Config builds a Bridge.
type Config struct {
	Deps    *tools.Deps
	Logger  *slog.Logger
	Version string
	// Tools overrides the tool list (tests); default tools.All().
	Tools []*tools.Tool
}

// Bridge is the MCP server over the tools, with its gate.
type Bridge struct {
	server *sdk.Server
	gate   *Gate
	log    *slog.Logger
	deps   *tools.Deps
	tools  []*tools.Tool
}

// New registers every tool with a new SDK server.
func New(cfg Config) (*Bridge, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tools == nil {
		cfg.Tools = tools.All()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	b := &Bridge{log: cfg.Logger, deps: cfg.Deps, tools: cfg.Tools}
	impl := &sdk.Implementation{Name: ServerName, Version: cfg.Version}
	b.server = sdk.NewServer(impl, &sdk.ServerOptions{
		SupportedProtocolVersions: ProtocolVersions,
		Instructions: "Tools over Spaces (desktops running cua-spacesd). list_spaces shows them; add_space registers one. " +
			"A failed tool answers isError with structuredContent.error.kind.",
	})
	schemas := map[string]*jsonschema.Schema{}
	for _, t := range cfg.Tools {
		schemas[t.Name] = t.Schema
		b.server.AddTool(sdkTool(t), b.handler(t))
	}
	g, err := NewGate(impl, schemas)
	if err != nil {
		return nil, err
	}
	b.gate = g
	return b, nil
}

// sdkTool is how tools/list shows a tool: its schemas, title and hints.
func sdkTool(t *tools.Tool) *sdk.Tool {
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

// OutputSchema is the output schema tools/list shows for a tool: its
// result, or the error envelope every tool answers when it fails. Clients
// validate structuredContent against the schema on isError results too
// (the TypeScript SDK does), so a schema of the result alone would turn
// each failure into a client-side schema error.
func OutputSchema(t *tools.Tool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{t.Output, errorEnvelopeSchema}}
}

// ErrorEnvelope is the structuredContent of a tool that ran and failed.
type ErrorEnvelope struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error of an ErrorEnvelope: the kind a caller branches
// on, the message a person reads, and what the daemon said besides.
type ErrorDetail struct {
	Kind       string `json:"kind"`
	Message    string `json:"message"`
	Feature    string `json:"feature,omitempty"`
	Limitation string `json:"limitation,omitempty"`
	Hint       string `json:"hint,omitempty"`
}

var errorEnvelopeSchema = func() *jsonschema.Schema {
	s, err := jsonschema.For[ErrorEnvelope](nil)
	if err != nil {
		panic(err)
	}
	return s
}()

// Gate is the bridge's validating gate.
func (b *Bridge) Gate() *Gate { return b.gate }

// Tools lists the served tools.
func (b *Bridge) Tools() []*tools.Tool { return b.tools }

// handler adapts one tool to the SDK: progress, the error envelope, and one
// log line per call (never arguments or tokens).
func (b *Bridge) handler(t *tools.Tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		res, space, err := b.deps.Invoke(ctx, t, req.Params.Arguments, progressFunc(ctx, req))
		status := "ok"
		if err != nil {
			status = string(api.KindOf(err))
		}
		b.log.LogAttrs(ctx, slog.LevelInfo, "tool call",
			slog.String("tool", t.Name), slog.String("space", space), slog.String("status", status),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
		if err != nil {
			return ErrorResult(err), nil
		}
		return toResult(res), nil
	}
}

// progressFunc sends notifications/progress when the call carried a
// progressToken, at most every progressInterval (and always the last one).
func progressFunc(ctx context.Context, req *sdk.CallToolRequest) func(done, total float64, msg string) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	var mu sync.Mutex
	var last time.Time
	return func(done, total float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if done < total && time.Since(last) < progressInterval {
			return
		}
		last = time.Now()
		p := &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: done, Message: msg}
		if total > 0 {
			p.Total = total
		}
		_ = req.Session.NotifyProgress(ctx, p)
	}
}

// ErrorResult is the envelope of a tool that ran and failed.
func ErrorResult(err error) *sdk.CallToolResult {
	e := api.AsError(err)
	return &sdk.CallToolResult{
		IsError: true,
		Content: []sdk.Content{&sdk.TextContent{Text: "error: " + e.Error()}},
		StructuredContent: ErrorEnvelope{Error: ErrorDetail{
			Kind: string(e.Kind), Message: e.Error(), Feature: e.Feature, Limitation: e.Limitation, Hint: e.Hint,
		}},
	}
}

func toResult(r *tools.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: []sdk.Content{}}
	if r == nil {
		return out
	}
	if r.Image != nil {
		out.Content = append(out.Content, &sdk.ImageContent{Data: r.Image.Data, MIMEType: r.Image.MIMEType})
	}
	if r.Text != "" || len(out.Content) == 0 {
		out.Content = append(out.Content, &sdk.TextContent{Text: r.Text})
	}
	if r.Structured != nil {
		// structuredContent must be a JSON object; marshal once here so a
		// tool's struct and a map are treated alike.
		if b, err := json.Marshal(r.Structured); err == nil && len(b) > 0 && b[0] == '{' {
			out.StructuredContent = json.RawMessage(b)
		} else if err == nil {
			out.StructuredContent = map[string]json.RawMessage{"result": b}
		} else {
			out.Content = append(out.Content, &sdk.TextContent{Text: fmt.Sprintf("(structured result unavailable: %v)", err)})
		}
	}
	return out
}
