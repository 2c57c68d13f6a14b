// Package mcptest is a real MCP server for tests (the official Go SDK over
// stdio), run by a test binary that re-executes itself: a test declares it
// as a Space's MCP service (Command and Env), and TestMain calls Main
// first. Its tools answer every kind of content part, fail, crash, report
// progress and notice a cancellation, so that the tests see what crosses
// the daemon and the bridge.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment of the re-executed test binary.
const (
	// EnvMode makes the binary this server: ModeServe, or a broken one.
	EnvMode = "CUA_MCPTEST_MODE"
	// EnvDir is the folder where it leaves marks (Started, Cancelled).
	EnvDir = "CUA_MCPTEST_DIR"
)

// Modes of EnvMode.
const (
	ModeServe = "serve"
	// ModeMute reads its stdin and never answers: a service that never
	// answers initialize.
	ModeMute = "mute"
	// ModeExit writes a line to stderr and exits 7 at once.
	ModeExit = "exit"
)

// Marks the server leaves in EnvDir.
const (
	// Started is written when slow starts.
	Started = "started"
	// Cancelled is written when slow's call is cancelled.
	Cancelled = "cancelled"
)

// Main serves when the environment says so, and then exits. A TestMain
// calls it first.
func Main() {
	switch os.Getenv(EnvMode) {
	case "":
		return
	case ModeMute:
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case ModeExit:
		fmt.Fprintln(os.Stderr, "mcptest: exiting at once, on purpose")
		os.Exit(7)
	}
	err := Server().Run(context.Background(), &sdk.StdioTransport{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
	}
	os.Exit(0)
}

// Env is the environment that makes the test binary this server, leaving
// its marks in dir.
func Env(mode, dir string) map[string]string {
	return map[string]string{EnvMode: mode, EnvDir: dir}
}

// Command is the test binary, to run as the server.
func Command() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe
}

// LargeInt is past float64's exact integers: passed through a decode into
// float64 and back, it would come out as 9007199254740992.
const LargeInt = "9007199254740993"

// PartsStructured is the structuredContent of "parts": a large integer,
// and keys out of order, which a decode and encode would change.
const PartsStructured = `{"big":` + LargeInt + `,"z":[1,2.5,"x"],"a":{"nested":true}}`

// Parts is what the tool "parts" answers: one part of each kind (a text
// with characters JSON escapes, an image, audio, an embedded resource and
// a link), and structuredContent with LargeInt.
func Parts() *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: "héllo <b>&</b> \"world\"\n\u2028tab\t✓"},
			&sdk.ImageContent{Data: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake image bytes \xff\xfe"), MIMEType: "image/png"},
			&sdk.AudioContent{Data: []byte("RIFF\x24\x00\x00\x00WAVEfmt "), MIMEType: "audio/wav"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes/a.md", MIMEType: "text/markdown", Text: "# A\n"}},
			&sdk.ResourceLink{URI: "file:///notes/b.md", Name: "b.md"},
		},
		StructuredContent: json.RawMessage(PartsStructured),
	}
}

// Server is the test server.
func Server() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	obj := func(props map[string]*jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "object", Properties: props}
	}
	text := func(t string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: t}}}
	}
	var args = func(req *sdk.CallToolRequest) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Answers its text.", InputSchema: obj(map[string]*jsonschema.Schema{"text": {Type: "string"}})},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			t, _ := args(req)["text"].(string)
			return text(t), nil
		})
	s.AddTool(&sdk.Tool{Name: "parts", Description: "Answers one content part of each kind.", InputSchema: obj(nil)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return Parts(), nil })
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Fails as a tool does.", InputSchema: obj(nil)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it failed on purpose"}},
				StructuredContent: json.RawMessage(`{"reason":"on purpose"}`)}, nil
		})
	s.AddTool(&sdk.Tool{Name: "stderr", Description: "Writes its line to stderr.", InputSchema: obj(map[string]*jsonschema.Schema{"line": {Type: "string"}})},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			l, _ := args(req)["line"].(string)
			fmt.Fprintln(os.Stderr, l)
			return text("written"), nil
		})
	s.AddTool(&sdk.Tool{Name: "crash", Description: "Exits 3 in the middle of the call.", InputSchema: obj(nil)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "slow", Description: "Reports progress every 20 ms for steps steps, or until cancelled.",
		InputSchema: obj(map[string]*jsonschema.Schema{"steps": {Type: "integer"}})},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			steps, _ := args(req)["steps"].(float64)
			mark(Started)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for i := 1; i <= int(steps); i++ {
				select {
				case <-ctx.Done():
					mark(Cancelled)
					return nil, ctx.Err()
				case <-tick.C:
				}
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: steps, Message: "step"})
				}
			}
			return text(fmt.Sprintf("%d steps", int(steps))), nil
		})
	return s
}

// mark leaves a mark in EnvDir.
func mark(name string) {
	if dir := os.Getenv(EnvDir); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, name), []byte(time.Now().String()), 0o644)
	}
}
