package mcp_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/mcp"
)

func TestProtocolVersions(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ ask, want string }{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2024-11-05", "2024-11-05"},
		// The stateless revision has no initialize: a client asking for it
		// there gets the newest revision that has one.
		{"2026-07-28", "2025-11-25"},
		{"2099-01-01", "2025-11-25"}, // unknown: the newest with initialize
	} {
		t.Run(tc.ask, func(t *testing.T) {
			_, r := e.initialize(t, tc.ask)
			res, _ := r.message["result"].(map[string]any)
			if got := res["protocolVersion"]; got != tc.want {
				t.Fatalf("protocolVersion = %v, want %s", got, tc.want)
			}
		})
	}
}

func TestGateHTTP(t *testing.T) {
	e := newEnv(t)
	sid, _ := e.initialize(t, "2025-06-18")
	hs := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	big := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", mcp.MaxMessageBytes) + `"}}`
	tests := []struct {
		name       string
		body       string
		hdr        map[string]string
		wantStatus int
		wantCode   int
	}{
		{"bad json", `{"jsonrpc":`, hs, http.StatusBadRequest, -32700},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, hs, http.StatusBadRequest, -32600},
		{"over 1 MB", big, hs, http.StatusRequestEntityTooLarge, -32600},
		{"not an object", `42`, hs, http.StatusBadRequest, -32600},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, hs, http.StatusBadRequest, -32600},
		{"missing session", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, http.StatusBadRequest, -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"no/such"}`, hs, http.StatusOK, -32601},
		{"unknown tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, hs, http.StatusOK, -32601},
		{"arguments not object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"space_bash","arguments":[1]}}`, hs, http.StatusOK, -32602},
		{"schema mismatch", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s1","command":5}}}`, hs, http.StatusOK, -32602},
		{"missing required", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s1"}}}`, hs, http.StatusOK, -32602},
		{"params not object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":3}`, hs, http.StatusOK, -32602},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.raw(t, http.MethodPost, tc.body, tc.hdr)
			if r.status != tc.wantStatus || rpcCode(r.message) != tc.wantCode {
				t.Fatalf("status %d code %d (%v), want %d %d", r.status, rpcCode(r.message), r.message, tc.wantStatus, tc.wantCode)
			}
		})
	}
	// A valid call on the same session still works after all that.
	r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hs)
	if r.status != http.StatusOK || r.message["result"] == nil {
		t.Fatalf("ping after gate errors: %d %v", r.status, r.message)
	}
}

func TestDeleteEndsSession(t *testing.T) {
	e := newEnv(t)
	sid, _ := e.initialize(t, "2025-06-18")
	hs := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	if r := e.raw(t, http.MethodDelete, "", hs); r.status/100 != 2 {
		t.Fatalf("DELETE: %d", r.status)
	}
	if r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, hs); r.status != http.StatusNotFound {
		t.Fatalf("reuse after DELETE: %d, want 404", r.status)
	}
	if r := e.raw(t, http.MethodDelete, "", hs); r.status != http.StatusNotFound {
		t.Fatalf("second DELETE: %d, want 404", r.status)
	}
}

func TestOriginAndHost(t *testing.T) {
	e := newEnv(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"foreign origin without token", map[string]string{"Origin": "https://evil.example", "Authorization": ""}, http.StatusForbidden},
		{"loopback origin", map[string]string{"Origin": "http://localhost:5173"}, http.StatusOK},
		{"loopback ip origin", map[string]string{"Origin": "http://127.0.0.1:8080"}, http.StatusOK},
		{"foreign host", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if h, ok := tc.hdr["Host"]; ok {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url, strings.NewReader(init))
				req.Host = h
				req.Header.Set("Authorization", "Bearer "+e.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
				}
				return
			}
			if r := e.raw(t, http.MethodPost, init, tc.hdr); r.status != tc.want {
				t.Fatalf("status %d, want %d", r.status, tc.want)
			}
		})
	}
}

func TestBearer(t *testing.T) {
	e := newEnv(t)
	sid, _ := e.initialize(t, "2025-06-18")
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		for name, auth := range map[string]string{"missing": "", "wrong": "Bearer " + e.token + "x", "basic": "Basic " + e.token} {
			t.Run(method+" "+name, func(t *testing.T) {
				r := e.raw(t, method, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Authorization": auth, "Mcp-Session-Id": sid})
				if r.status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401", r.status)
				}
			})
		}
	}
}
