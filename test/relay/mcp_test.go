package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcptest"
)

// userHTTP is a relay user's HTTP client: their token on every request,
// the relay trusted by the test CA.
func (w *world) userHTTP(t testing.TB, token string) *http.Client {
	tr := &http.Transport{TLSClientConfig: w.viewerTLS(t)}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: bearerTransport{token, tr}}
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// spaceMCP connects the Go SDK's client (the modern revision: each call a
// request of its own) to the Space's own /mcp through the relay.
func spaceMCP(ctx context.Context, hc *http.Client, endpoint string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "shared", Version: "1"}, nil)
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
}

// mcpPost sends one JSON-RPC message to endpoint in a 2025-06-18 session
// sid ("" to open one): a revision whose calls outlive their request.
func mcpPost(ctx context.Context, hc *http.Client, endpoint, sid, body string) (int, string, []byte, error) {
	return mcptest.PostWith(ctx, hc, endpoint, "", sid, []byte(body))
}

func mcpSession(t *testing.T, hc *http.Client, endpoint string) string {
	t.Helper()
	status, sid, body, err := mcpPost(t.Context(), hc, endpoint, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil || status != http.StatusOK || sid == "" {
		t.Fatalf("initialize through the relay: %d %s %v", status, body, err)
	}
	_, _, _, _ = mcpPost(t.Context(), hc, endpoint, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// TestSharedEditorUsesSpaceMCP: bob, a teammate alice shares her Space
// with as an editor, uses the Space's own MCP endpoint through the relay
// (no token of the Space, only his grant): its tools run as him. When
// alice lowers him to a viewer mid-call, the relay's kick ends his call in
// flight and what it ran, over either revision (the one whose calls are
// their own requests, and 2025-06-18's sessions, whose calls outlive
// their request), and as a viewer he opens no MCP session at all.
func TestSharedEditorUsesSpaceMCP(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	alice := newBridge(t, w, w.user("alice"))
	bob := w.userHTTP(t, w.user("bob"))
	if _, err := w.relay.Store.CreateTeam(ctx, "crew"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := w.relay.Store.AddTeamMember(ctx, "crew", u); err != nil {
			t.Fatal(err)
		}
	}
	s := startSpace(t, "")
	alice.addSpace(t, "box", s)
	share := func(role string) sharesResult {
		var r sharesResult
		alice.call(t, "share_space", map[string]any{"space": "box", "who": "bob", "role": role}, &r)
		return r
	}
	endpoint := strings.TrimSuffix(share("editor").URL, "/") + api.PathMCP
	s.waitConnected(t, 0)

	for _, c := range []struct {
		name string
		// start opens bob's MCP connection and answers how to call
		// space_bash with args on it (failed: a transport's error or the
		// tool's), and the checks once he was lowered to a viewer.
		start func(t *testing.T) (call func(ctx context.Context, args map[string]any) (failed bool, how string), after func(t *testing.T))
	}{
		{"modern revision", func(t *testing.T) (func(context.Context, map[string]any) (bool, string), func(*testing.T)) {
			cs, err := spaceMCP(t.Context(), bob, endpoint)
			if err != nil {
				t.Fatalf("an editor's MCP session through the relay: %v", err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			return func(ctx context.Context, args map[string]any) (bool, string) {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "space_bash", Arguments: args})
				if err != nil {
					return true, err.Error()
				}
				return res.IsError, mcptest.Text(res)
			}, func(*testing.T) {}
		}},
		{"2025-06-18 session", func(t *testing.T) (func(context.Context, map[string]any) (bool, string), func(*testing.T)) {
			sid := mcpSession(t, bob, endpoint)
			return func(ctx context.Context, args map[string]any) (bool, string) {
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "space_bash", "arguments": args}})
					status, _, body, err := mcpPost(ctx, bob, endpoint, sid, string(b))
					if err != nil {
						return true, err.Error()
					}
					return status != http.StatusOK || !strings.Contains(string(body), `"exit_code":0`), string(body)
				}, func(t *testing.T) {
					if status, _, body, _ := mcpPost(t.Context(), bob, endpoint, sid, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); status == http.StatusOK {
						t.Errorf("bob's session as a viewer: %d %s, want it refused", status, body)
					}
				}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			share("editor")
			call, after := c.start(t)
			if failed, how := call(t.Context(), map[string]any{"command": "echo editor-$((6*7))"}); failed || !strings.Contains(how, "editor-42") {
				t.Fatalf("an editor's space_bash through the relay's MCP: %s", how)
			}
			pidFile := filepath.Join(t.TempDir(), "pid")
			type outcome struct {
				failed bool
				how    string
			}
			done := make(chan outcome, 1)
			go func() {
				f, how := call(context.Background(), map[string]any{"command": fmt.Sprintf("echo $$ > %s; exec sleep 600", pidFile), "timeout": 900})
				done <- outcome{f, how}
			}()
			var pid int
			waitFor(t, "bob's command started", func() bool {
				b, _ := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				return pid > 0
			})
			share("viewer")
			select {
			case o := <-done:
				if !o.failed {
					t.Fatalf("bob's call once lowered to a viewer: %s, want a failure", o.how)
				}
			case <-time.After(waitTimeout):
				t.Fatal("bob's MCP call in flight outlived his lowered role")
			}
			waitFor(t, "bob's command was killed", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
			after(t)
			if cs, err := spaceMCP(t.Context(), bob, endpoint); err == nil {
				_ = cs.Close()
				t.Fatal("a viewer opened an MCP session through the relay")
			}
		})
	}
}

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
