package mcp_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/internal/nstest"
	"github.com/trycua/cua-spacesd/mcp/mcptest"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestMain lets the test binary be the MCP server a Space declares, and
// runs the tests in namespaces of their own: their X servers and ports
// cannot meet another test run's on the same machine.
func TestMain(m *testing.M) {
	mcptest.Main()
	nstest.Main("bridge/mcp")
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

// Across both hops (bridge, daemon, service) every part of a result
// passes unchanged: the content parts as the service wrote them,
// structuredContent byte for byte (its large integer and key order), and
// isError with the service's own content.
func TestBridgeCallToolPassesThrough(t *testing.T) {
	e, _ := newServicesEnv(t)
	sid, _ := e.initialize(t, "2025-06-18")
	raw := mcptest.RawCall(t, e.url, e.token, sid, "call_tool", map[string]any{"space": "s1", "service": "test", "tool": "parts"})
	mcptest.CheckParts(t, raw)
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
// crosses both to stop the call inside the service. Both go over the
// Space's one session with the daemon, which a cancelled call leaves
// serving the next.
func TestBridgeProgressAndCancel(t *testing.T) {
	e, dir := newServicesEnv(t)
	mcptest.ProgressAndCancel(t, dir, func(o *sdk.ClientOptions) *sdk.ClientSession { return e.client(t, o) },
		func(slow map[string]any) *sdk.CallToolParams {
			return &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"space": "s1", "service": "test", "tool": "slow", "arguments": slow}}
		})
	res := call(t, e.client(t, nil), "call_tool", map[string]any{"space": "s1", "service": "test", "tool": "echo", "arguments": map[string]any{"text": "next"}})
	if res.IsError || text(res) != "next" {
		t.Fatalf("the call after the cancelled one: %+v", res)
	}
	if n := spacesdtest.Metrics(t, e.daemon.URL, e.daemon.Token)[mcpsvc.MetricSessionsOpened]; n != 1 {
		t.Fatalf("the bridge opened %v sessions with the daemon, want 1", n)
	}
}
