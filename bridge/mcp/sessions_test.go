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
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// sessionEnv is a bridge without tools (sessions need none) serving
// streamable HTTP on loopback with the given session bounds.
func sessionEnv(t *testing.T, o mcp.HTTPOptions) (*env, *mcp.Bridge) {
	t.Helper()
	b, err := mcp.New(mcp.Config{Tools: []*mcpserve.Tool{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Token, o.Loopback = spacesdtest.Token(), true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mcp.Serve(ctx, ln, b.HTTPHandler(o), slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &env{bridge: b, url: "http://" + ln.Addr().String() + mcp.MCPPath, token: o.Token}, b
}

// A session over the cap is refused with a JSON-RPC error that says what to
// do; ending one makes room again.
func TestSessionCap(t *testing.T) {
	const max = 3
	e, b := sessionEnv(t, mcp.HTTPOptions{MaxSessions: max})
	sids := make([]string, max)
	for i := range sids {
		sids[i], _ = e.initialize(t, "2025-06-18")
	}
	over := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	errObj, _ := over.message["error"].(map[string]any)
	msg, _ := errObj["message"].(string)
	if over.status != http.StatusServiceUnavailable || rpcCode(over.message) != mcpserve.CodeTooManySessions ||
		!strings.Contains(msg, "too many MCP sessions") || !strings.Contains(msg, "DELETE") {
		t.Fatalf("initialize over the cap: %d %v; want 503 with a JSON-RPC error naming the cap and DELETE", over.status, over.message)
	}
	if n := b.SessionCount(); n != max {
		t.Fatalf("%d sessions open, want %d", n, max)
	}
	// The sessions already open are untouched...
	hs := map[string]string{"Mcp-Session-Id": sids[0], "Mcp-Protocol-Version": "2025-06-18"}
	if r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hs); r.status != http.StatusOK {
		t.Fatalf("ping on an open session at the cap: %d %v", r.status, r.message)
	}
	// ...and one ended makes room for a new one.
	if r := e.raw(t, http.MethodDelete, "", hs); r.status/100 != 2 {
		t.Fatalf("DELETE: %d", r.status)
	}
	e.initialize(t, "2025-06-18")
}

// A session idle past its timeout ends: its memory goes, and a request
// with its id answers 404, the transport's "initialize again".
func TestIdleSessionsExpire(t *testing.T) {
	e, b := sessionEnv(t, mcp.HTTPOptions{SessionIdle: 100 * time.Millisecond})
	sid, _ := e.initialize(t, "2025-06-18")
	// Watch the count, not the session: a request would keep it alive.
	eventually(t, "the idle session ends", func() bool { return b.SessionCount() == 0 })
	hs := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	if r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hs); r.status != http.StatusNotFound {
		t.Fatalf("a request of an expired session: %d, want 404", r.status)
	}
	e.initialize(t, "2025-06-18") // and a new one opens
}
