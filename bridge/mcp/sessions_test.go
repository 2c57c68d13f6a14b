package mcp_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/bridge/mcp"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// sessionEnv is a bridge without tools (sessions need none) serving
// streamable HTTP on loopback with the given session bounds, as cua-bridge
// serve does, and its log.
func sessionEnv(t *testing.T, o mcp.HTTPOptions) (*env, *mcp.Bridge, *spacesdtest.Logs) {
	t.Helper()
	logs := &spacesdtest.Logs{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	b, err := mcp.New(mcp.Config{Tools: []*mcpserve.Tool{}, Version: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	o.Token, o.Loopback = spacesdtest.Token(), true
	addr, _ := testenv.Serve(t, func(ctx context.Context, ln net.Listener) error {
		return mcp.Serve(ctx, ln, b.HTTPHandler(o), log)
	})
	return &env{bridge: b, url: "http://" + addr + mcp.MCPPath, token: o.Token}, b, logs
}

// ping answers the status of a ping in session sid.
func (e *env) ping(t *testing.T, sid string) int {
	t.Helper()
	hs := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	return e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hs).status
}

// listen holds session sid's standalone SSE stream (GET) open until the
// returned func is called: the session has a request running meanwhile.
func (e *env) listen(t *testing.T, sid string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	stop = func() { cancel(); resp.Body.Close() }
	t.Cleanup(stop)
	return stop
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// At the cap (the default, 256, as cua-bridge serve has it), a new
// initialize ends the session idle longest instead of being refused: a
// client that crash-loops (an initialize per start, never a DELETE) cannot
// shut the others out. The evicted id answers 404; a session used lately
// still works; the eviction is logged without the session's id or token.
func TestSessionCapEvictsIdleLongest(t *testing.T) {
	e, b, logs := sessionEnv(t, mcp.HTTPOptions{})
	sids := make([]string, mcpserve.MaxSessions)
	for i := range sids {
		sids[i], _ = e.initialize(t, "2025-06-18")
	}
	// The oldest is used now: the second oldest is the one idle longest.
	if st := e.ping(t, sids[0]); st != http.StatusOK {
		t.Fatalf("ping: %d", st)
	}
	fresh, _ := e.initialize(t, "2025-06-18")
	if st := e.ping(t, sids[1]); st != http.StatusNotFound {
		t.Fatalf("a request of the session idle longest, after an initialize at the cap: %d, want 404", st)
	}
	for _, sid := range []string{sids[0], sids[2], sids[len(sids)-1], fresh} {
		if st := e.ping(t, sid); st != http.StatusOK {
			t.Fatalf("ping on a session not evicted: %d", st)
		}
	}
	eventually(t, "the evicted session ends", func() bool { return b.SessionCount() == mcpserve.MaxSessions })
	log := logs.String()
	if strings.Count(log, "MCP session evicted") != 1 {
		t.Fatalf("want one eviction logged; log:\n%s", log)
	}
	if strings.Contains(log, e.token) || strings.Contains(log, sids[1]) {
		t.Fatalf("the log names the token or the evicted session's id:\n%s", log)
	}
}

// A session with a request running (here its standalone GET stream) is in
// use and never evicted: when every session is, an initialize is refused
// with a JSON-RPC error that says what to do. Once one is idle again, it
// makes room.
func TestSessionCapKeepsSessionsInUse(t *testing.T) {
	const max = 2
	e, b, _ := sessionEnv(t, mcp.HTTPOptions{MaxSessions: max})
	a, _ := e.initialize(t, "2025-06-18")
	c, _ := e.initialize(t, "2025-06-18")
	stopA := e.listen(t, a)
	e.listen(t, c)
	over := e.raw(t, http.MethodPost, initializeBody, nil)
	errObj, _ := over.message["error"].(map[string]any)
	msg, _ := errObj["message"].(string)
	if over.status != http.StatusServiceUnavailable || rpcCode(over.message) != mcpserve.CodeTooManySessions ||
		!strings.Contains(msg, "too many MCP sessions") || !strings.Contains(msg, "DELETE") {
		t.Fatalf("initialize at the cap, every session in use: %d %v; want 503 with a JSON-RPC error naming the cap and DELETE", over.status, over.message)
	}
	if n := b.SessionCount(); n != max {
		t.Fatalf("%d sessions open, want %d", n, max)
	}
	stopA()
	// The server sees the stream end when the connection closes.
	eventually(t, "an initialize evicts the session whose stream ended", func() bool {
		return e.raw(t, http.MethodPost, initializeBody, nil).status == http.StatusOK
	})
	if st := e.ping(t, a); st != http.StatusNotFound {
		t.Fatalf("the evicted session: %d, want 404", st)
	}
	if st := e.ping(t, c); st != http.StatusOK {
		t.Fatalf("the session in use: %d", st)
	}
}

// A session idle past its timeout ends: its memory goes, and a request
// with its id answers 404, the transport's "initialize again".
func TestIdleSessionsExpire(t *testing.T) {
	e, b, _ := sessionEnv(t, mcp.HTTPOptions{SessionIdle: 100 * time.Millisecond})
	sid, _ := e.initialize(t, "2025-06-18")
	// Watch the count, not the session: a request would keep it alive.
	eventually(t, "the idle session ends", func() bool { return b.SessionCount() == 0 })
	hs := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	if r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hs); r.status != http.StatusNotFound {
		t.Fatalf("a request of an expired session: %d, want 404", r.status)
	}
	e.initialize(t, "2025-06-18") // and a new one opens
}
