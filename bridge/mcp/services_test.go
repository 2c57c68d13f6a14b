package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/internal/mcptest"
	"github.com/trycua/cua-spacesd/internal/spacetools"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestMain lets the test binary be the MCP server a Space declares.
func TestMain(m *testing.M) {
	mcptest.Main()
	os.Exit(m.Run())
}

// newServicesEnv is a bridge over a Space that declares the test server as
// its service "test" (marks in the returned folder), and one that never
// answers initialize as "mute".
func newServicesEnv(t *testing.T) (*env, string) {
	t.Helper()
	dir := t.TempDir()
	svc := func(name, mode string, init time.Duration) mcpsvc.ServiceConfig {
		return mcpsvc.ServiceConfig{Name: name, Transport: mcpsvc.TransportStdio, Command: mcptest.Command(), Env: mcptest.Env(mode, dir),
			InitTimeout: init, IdleTimeout: mcpsvc.DefaultIdleTimeout}
	}
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{MCP: mcpsvc.Options{Config: &mcpsvc.Config{Services: []mcpsvc.ServiceConfig{
		svc("mute", mcptest.ModeMute, 500*time.Millisecond), svc("test", mcptest.ModeServe, mcpsvc.DefaultInitTimeout),
	}}}}})
	return e, dir
}

// rawResult calls a tool of the bridge over plain HTTP and answers the
// result's bytes as the bridge sent them.
func (e *env) rawResult(t *testing.T, tool string, args map[string]any) []byte {
	t.Helper()
	sid, _ := e.initialize(t, "2025-06-18")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			d = line
		}
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(d), &m) == nil && m.ID == 2 && m.Result != nil {
			return m.Result
		}
	}
	t.Fatalf("no result in %s", data)
	return nil
}

// Across both hops (bridge, daemon, service) every part of a result
// passes unchanged: the content parts as the service wrote them,
// structuredContent byte for byte (its large integer and key order), and
// isError with the service's own content.
func TestBridgeCallToolPassesThrough(t *testing.T) {
	e, _ := newServicesEnv(t)
	raw := e.rawResult(t, "call_tool", map[string]any{"space": "s1", "service": "test", "tool": "parts"})
	var got struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(mcptest.Parts().Content)
	var gotV, wantV any
	_ = json.Unmarshal(got.Content, &gotV)
	_ = json.Unmarshal(want, &wantV)
	if !reflect.DeepEqual(gotV, wantV) || got.IsError {
		t.Fatalf("content\n got %s\nwant %s", got.Content, want)
	}
	if w := `{"big":` + mcptest.LargeInt + `,"z":[1,2.5,"x"],"a":{"nested":true}}`; string(got.StructuredContent) != w {
		t.Fatalf("structuredContent %s, want %s byte for byte", got.StructuredContent, w)
	}
	cs := e.client(t, nil)
	res := call(t, cs, "call_tool", map[string]any{"space": "s1", "service": "test", "tool": "fail"})
	if !res.IsError || text(res) != "it failed on purpose" || !reflect.DeepEqual(res.StructuredContent, map[string]any{"reason": "on purpose"}) {
		t.Fatalf("fail: %+v", res)
	}
	// The built-in service is the default.
	res = call(t, cs, "call_tool", map[string]any{"space": "s1", "tool": "space_bash", "arguments": map[string]any{"command": "echo in the space"}})
	if res.IsError || !strings.Contains(text(res), "in the space") {
		t.Fatalf("call_tool space_bash: %+v", res)
	}
}

// list_tools through the bridge lists a service's tools and the services;
// a failing service answers kind mcp, an unknown one not_found, each
// within its bound.
func TestBridgeListToolsAndFailures(t *testing.T) {
	e, _ := newServicesEnv(t)
	cs := e.client(t, nil)
	res := call(t, cs, "list_tools", map[string]any{"space": "s1", "service": "test", "name": "echo"})
	var l spacetools.ToolList
	structured(t, res, &l)
	if l.Service != "test" || l.Count != 1 || l.Tools[0].Name != "echo" || l.Tools[0].InputSchema == nil || len(l.Services) != 3 {
		t.Fatalf("list_tools: %+v", l)
	}
	res = call(t, cs, "call_tool", map[string]any{"space": "s1", "service": "mute", "tool": "echo"})
	if k := errKind(t, res); k != "mcp" || !strings.Contains(text(res), "did not answer initialize within 500ms") {
		t.Fatalf("mute: %s %s", k, text(res))
	}
	res = call(t, cs, "list_tools", map[string]any{"space": "s1", "service": "nope"})
	if k := errKind(t, res); k != "not_found" {
		t.Fatalf("unknown service: %s %s", k, text(res))
	}
	res = call(t, cs, "call_tool", map[string]any{"space": "s1", "service": "test", "tool": "crash"})
	if k := errKind(t, res); k != "mcp" || !strings.Contains(text(res), "exited with status 3") {
		t.Fatalf("crash: %s %s", k, text(res))
	}
	res = call(t, cs, "call_tool", map[string]any{"space": "s1", "service": "test", "tool": "echo", "arguments": map[string]any{"text": "again"}})
	if res.IsError || text(res) != "again" {
		t.Fatalf("echo after the crash: %+v", res)
	}
}

// Progress crosses both hops to the agent, and the agent's cancellation
// crosses both to stop the call inside the service.
func TestBridgeProgressAndCancel(t *testing.T) {
	e, dir := newServicesEnv(t)
	var mu sync.Mutex
	var progress []float64
	cs := e.client(t, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, r.Params.Progress)
		mu.Unlock()
	}})
	params := &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"space": "s1", "service": "test", "tool": "slow", "arguments": map[string]any{"steps": 3}}}
	params.SetProgressToken("p")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError || text(res) != "3 steps" {
		t.Fatalf("slow: %+v %v", res, err)
	}
	eventually(t, "three progress notifications through both hops", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) == 3 && progress[2] == 3
	})
	if err := os.Remove(filepath.Join(dir, mcptest.Started)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"space": "s1", "service": "test", "tool": "slow", "arguments": map[string]any{"steps": 100000}}})
		done <- err
	}()
	eventually(t, "slow starts", func() bool { return fileExists(filepath.Join(dir, mcptest.Started)) })
	cancel()
	<-done
	eventually(t, "the service sees the agent's cancellation", func() bool { return fileExists(filepath.Join(dir, mcptest.Cancelled)) })
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
