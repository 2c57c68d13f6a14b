package mcpsvc_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// At the daemon's cap (the default, 256), a new initialize on /mcp ends the
// session idle longest instead of being refused (which shut every client
// out for up to an hour after a client that crash-looped). The evicted id
// answers 404; a session used lately still works; the eviction is logged
// without the session's id or the token.
func TestSessionCapEvictsIdleLongest(t *testing.T) {
	logs := &spacesdtest.Logs{}
	e := &env{d: spacesdtest.Start(t, spacesdtest.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})}
	tok := e.d.Token
	sids := make([]string, mcpserve.MaxSessions)
	for i := range sids {
		sids[i] = e.initialize(t, tok)
	}
	ping := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	// The oldest is used now: the second oldest is the one idle longest.
	if status, _, body := e.post(t, tok, sids[0], ping); status != http.StatusOK {
		t.Fatalf("ping: %d %s", status, body)
	}
	fresh := e.initialize(t, tok)
	if status, _, body := e.post(t, tok, sids[1], ping); status != http.StatusNotFound {
		t.Fatalf("a request of the session idle longest, after an initialize at the cap: %d %s, want 404", status, body)
	}
	for _, sid := range []string{sids[0], sids[2], sids[len(sids)-1], fresh} {
		if status, _, body := e.post(t, tok, sid, ping); status != http.StatusOK {
			t.Fatalf("ping on a session not evicted: %d %s", status, body)
		}
	}
	log := logs.String()
	if strings.Count(log, "MCP session evicted") != 1 {
		t.Fatalf("want one eviction logged; log:\n%s", log)
	}
	if strings.Contains(log, tok) || strings.Contains(log, sids[1]) {
		t.Fatalf("the log names the token or the evicted session's id:\n%s", log)
	}
}
