package tools

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// sessionsEnv is a registry holding a real daemon as "s1", and the
// bridge's tool dependencies over it.
type sessionsEnv struct {
	reg  *registry.Registry
	deps *Deps
}

func newSessionsEnv(t *testing.T, d *spacesdtest.Daemon, opts ...registry.Option) *sessionsEnv {
	t.Helper()
	reg, err := registry.Open(t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Add(t.Context(), "s1", d.URL, d.Token); err != nil {
		t.Fatal(err)
	}
	deps := NewDeps(reg, nil)
	t.Cleanup(deps.Close)
	return &sessionsEnv{reg: reg, deps: deps}
}

// bash runs command in s1 through call_tool's path (the daemon's /mcp,
// its built-in service) and answers its output.
func (e *sessionsEnv) bash(t *testing.T, command string) string {
	t.Helper()
	sp, err := e.deps.space(t.Context(), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"command": command})
	raw, err := sp.Services.CallTool(t.Context(), spacetools.ToolCall{Service: spacetools.BuiltinService, Tool: "space_bash", Arguments: args})
	if err != nil {
		t.Fatalf("call_tool space_bash %q: %v", command, err)
	}
	var res mcpserve.RawResult
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
		t.Fatalf("call_tool space_bash %q: %s (%v)", command, raw, err)
	}
	return string(raw)
}

// opened is how many MCP sessions the daemon saw opened (initialize),
// and how many are open.
func opened(t *testing.T, d *spacesdtest.Daemon) (total, open float64) {
	t.Helper()
	m := spacesdtest.Metrics(t, d.URL, d.Token)
	return m[mcpsvc.MetricSessionsOpened], m[mcpsvc.MetricSessions]
}

// Calls to a Space, one after the other and at once, share one session
// (one initialize at the daemon); the bridge's end closes it there
// (DELETE) and leaves no goroutine behind.
func TestDaemonSessionShared(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	e := newSessionsEnv(t, d)
	// What the daemon and the test run is not the bridge's: only what the
	// calls start must be gone once the bridge is closed and the daemon
	// stopped (which ends the pooled HTTP connections to it).
	leaks := goleak.IgnoreCurrent()
	for i := range 5 {
		if out := e.bash(t, "echo call"+string(rune('0'+i))); !strings.Contains(out, "call"+string(rune('0'+i))) {
			t.Fatalf("call %d answered %s", i, out)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { e.bash(t, "true") })
	}
	wg.Wait()
	if total, open := opened(t, d); total != 1 || open != 1 {
		t.Fatalf("13 calls opened %v sessions (%v open), want 1", total, open)
	}
	e.deps.Close()
	if total, open := opened(t, d); total != 1 || open != 0 {
		t.Fatalf("after the bridge's end: %v opened, %v open; want the session deleted", total, open)
	}
	d.Stop()
	goleak.VerifyNone(t, leaks)
}

// A daemon restarted on the same address and token does not know the
// bridge's session: the next call opens a new one and is made again,
// once, since the daemon refused it before running it.
func TestDaemonSessionAfterRestart(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	conns := &dialedConns{}
	e := newSessionsEnv(t, d, registry.WithClients(func(e registry.Entry) (*client.Client, error) {
		return client.New(e.URL, e.Token, client.WithDialer(conns.dial))
	}))
	e.bash(t, "true")
	d.Stop()
	// The old daemon closed its connections; a client learns of it when
	// its reader next runs, and a POST written onto such a connection
	// before then fails with EOF, which is rightly not made again (a
	// server may have run a request and then died). A real restart takes
	// long enough for the reader to run: closing our ends too keeps this
	// test from racing it.
	conns.closeAll()
	d2 := spacesdtest.Start(t, spacesdtest.Options{Addr: strings.TrimPrefix(d.URL, "http://"), Token: d.Token})
	if out := e.bash(t, "echo after the restart"); !strings.Contains(out, "after the restart") {
		t.Fatalf("after the restart: %s", out)
	}
	e.bash(t, "true")
	if total, _ := opened(t, d2); total != 1 {
		t.Fatalf("the restarted daemon saw %v sessions opened, want 1", total)
	}
}

// dialedConns dials TCP and remembers what it dialed.
type dialedConns struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *dialedConns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, err
}

func (c *dialedConns) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	c.conns = nil
}

// A rotated token ends the session it opened (at the daemon); once the
// registry holds the new token, calls go on with a session of it.
func TestDaemonSessionTokenRotation(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	e := newSessionsEnv(t, d)
	e.bash(t, "true")
	fresh := spacesdtest.Token()
	d.Auth.Rotate(fresh)
	if _, err := e.reg.Add(t.Context(), "s1", d.URL, fresh); err != nil {
		t.Fatal(err)
	}
	if out := e.bash(t, "echo rotated"); !strings.Contains(out, "rotated") {
		t.Fatalf("after the rotation: %s", out)
	}
	e.bash(t, "true")
	m := spacesdtest.Metrics(t, d.URL, fresh)
	if total := m[mcpsvc.MetricSessionsOpened]; total != 2 {
		t.Fatalf("%v sessions opened, want 2 (one per token)", total)
	}
}

// A session idle for its bound is closed at the daemon; the next call
// opens another.
func TestDaemonSessionIdle(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	e := newSessionsEnv(t, d)
	e.deps.sessions.Close()
	e.deps.sessions = newDaemonSessions(50 * time.Millisecond)
	e.bash(t, "true")
	for {
		if _, open := opened(t, d); open == 0 {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the idle session was never closed")
		case <-time.After(20 * time.Millisecond):
		}
	}
	e.bash(t, "true")
	if total, open := opened(t, d); total != 2 || open != 1 {
		t.Fatalf("%v sessions opened, %v open; want 2, 1", total, open)
	}
}

// A caller that leaves while the session's handshake runs fails at once
// with its own context; the handshake goes on for the others.
func TestDaemonSessionCallerLeaves(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	e := newSessionsEnv(t, d)
	sp, err := e.deps.space(t.Context(), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := sp.Services.CallTool(ctx, spacetools.ToolCall{Service: spacetools.BuiltinService, Tool: "space_bash", Arguments: json.RawMessage(`{"command":"true"}`)}); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("a cancelled call answered %v", err)
	}
	e.bash(t, "true")
	if total, _ := opened(t, d); total != 1 {
		t.Fatalf("%v sessions opened, want 1", total)
	}
}
