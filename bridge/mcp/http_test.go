package mcp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/mcp/mcpserve"
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

// The gate's answers over raw HTTP, on every revision: the same codes
// everywhere, but arguments that do not fit a tool are a tool error from
// 2025-11-25 on, and the stateless revision has no session and no ping.
func TestGateHTTP(t *testing.T) {
	e := newEnv(t)
	for _, version := range mcpserve.ProtocolVersions {
		t.Run(version, func(t *testing.T) {
			modern := mcpserve.IsModern(version)
			hs := map[string]string{"Mcp-Protocol-Version": version}
			if !modern {
				sid, _ := e.initialize(t, version)
				hs["Mcp-Session-Id"] = sid
			}
			// body is a request as this revision sends it: a stateless one
			// names its revision in _meta.
			body := func(raw string) string {
				if modern {
					return withMeta(raw, version)
				}
				return raw
			}
			big := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", mcpserve.MaxMessageBytes) + `"}}`
			argsCode := -32602 // or a tool error, from 2025-11-25
			if version >= mcpserve.ToolErrorVersion {
				argsCode = toolErrorCode
			}
			tests := []struct {
				name       string
				body       string
				hdr        map[string]string
				wantStatus int
				wantCode   int
			}{
				{"bad json", `{"jsonrpc":`, hs, http.StatusBadRequest, -32700},
				{"batch", `[` + body(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`) + `]`, hs, http.StatusBadRequest, -32600},
				{"over 1 MB", big, hs, http.StatusRequestEntityTooLarge, -32600},
				{"not an object", `42`, hs, http.StatusBadRequest, -32600},
				{"wrong jsonrpc", body(`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`), hs, http.StatusBadRequest, -32600},
				{"unknown method", body(`{"jsonrpc":"2.0","id":1,"method":"no/such"}`), hs, http.StatusOK, -32601},
				{"unknown tool", body(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}`), hs, http.StatusOK, -32601},
				{"arguments not object", body(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"space_bash","arguments":[1]}}`), hs, http.StatusOK, argsCode},
				{"schema mismatch", body(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s1","command":5}}}`), hs, http.StatusOK, argsCode},
				{"missing required", body(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s1"}}}`), hs, http.StatusOK, argsCode},
				{"params not object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":3}`, hs, http.StatusOK, -32602},
			}
			if modern {
				tests = append(tests,
					struct {
						name       string
						body       string
						hdr        map[string]string
						wantStatus int
						wantCode   int
					}{"ping is gone", body(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), hs, http.StatusOK, -32601},
					struct {
						name       string
						body       string
						hdr        map[string]string
						wantStatus int
						wantCode   int
					}{"no revision in _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, hs, http.StatusOK, -32602},
				)
			} else {
				tests = append(tests,
					struct {
						name       string
						body       string
						hdr        map[string]string
						wantStatus int
						wantCode   int
					}{"missing session", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Protocol-Version": version}, http.StatusBadRequest, -32600},
					struct {
						name       string
						body       string
						hdr        map[string]string
						wantStatus int
						wantCode   int
					}{"server/discover is not there yet", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, hs, http.StatusOK, -32601},
				)
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					hdr := tc.hdr
					if modern {
						hdr = withMethodHeaders(tc.body, tc.hdr)
					}
					r := e.raw(t, http.MethodPost, tc.body, hdr)
					if r.status != tc.wantStatus || answerCode(r.message) != tc.wantCode {
						t.Fatalf("status %d code %d (%v), want %d %d", r.status, answerCode(r.message), r.message, tc.wantStatus, tc.wantCode)
					}
				})
			}
			if modern {
				// No session: nothing to end, no stream to open; a stray
				// session id changes nothing.
				for _, m := range []string{http.MethodDelete, http.MethodGet} {
					if r := e.raw(t, m, "", hs); r.status != http.StatusMethodNotAllowed {
						t.Errorf("%s on the stateless revision: %d, want 405", m, r.status)
					}
				}
				list := body(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
				stray := withMethodHeaders(list, map[string]string{"Mcp-Protocol-Version": version, "Mcp-Session-Id": "no-such-session"})
				if r := e.raw(t, http.MethodPost, list, stray); r.status != http.StatusOK || r.message["result"] == nil {
					t.Fatalf("stateless tools/list with a stray session id: %d %v", r.status, r.message)
				}
				// The method and tool travel in headers too, and must agree
				// with the body.
				call := body(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s1","command":"true"}}}`)
				for name, h := range map[string]map[string]string{
					"no Mcp-Method":    {"Mcp-Protocol-Version": version},
					"other Mcp-Method": {"Mcp-Protocol-Version": version, "Mcp-Method": "tools/list"},
					"no Mcp-Name":      {"Mcp-Protocol-Version": version, "Mcp-Method": "tools/call"},
					"other Mcp-Name":   {"Mcp-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": "space_ls"},
				} {
					if r := e.raw(t, http.MethodPost, call, h); r.status != http.StatusBadRequest || rpcCode(r.message) != mcpserve.CodeHeaderMismatch {
						t.Errorf("%s: %d %v, want 400 %d", name, r.status, r.message, mcpserve.CodeHeaderMismatch)
					}
				}
				return
			}
			unknown := map[string]string{"Mcp-Protocol-Version": version, "Mcp-Session-Id": "no-such-session"}
			if r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, unknown); r.status != http.StatusNotFound {
				t.Fatalf("unknown session: %d, want 404", r.status)
			}
			// A valid call on the same session still works after all that.
			r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hs)
			if r.status != http.StatusOK || r.message["result"] == nil {
				t.Fatalf("ping after gate errors: %d %v", r.status, r.message)
			}
		})
	}
}

// toolErrorCode stands for "a tool error of kind invalid_argument" where a
// test expects a JSON-RPC code.
const toolErrorCode = 1

// answerCode is a response's JSON-RPC error code, or toolErrorCode for a
// tool result that failed with kind invalid_argument, or 0.
func answerCode(m map[string]any) int {
	if res, ok := m["result"].(map[string]any); ok && res["isError"] == true {
		sc, _ := res["structuredContent"].(map[string]any)
		e, _ := sc["error"].(map[string]any)
		if e["kind"] == "invalid_argument" {
			return toolErrorCode
		}
	}
	return rpcCode(m)
}

// withMethodHeaders adds the Mcp-Method (and Mcp-Name) headers a stateless
// request carries, taken from its body, to hdr.
func withMethodHeaders(raw string, hdr map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range hdr {
		out[k] = v
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil {
		return out
	}
	var method string
	if json.Unmarshal(m["method"], &method) == nil && method != "" {
		out["Mcp-Method"] = method
	}
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(m["params"], &p) == nil && p.Name != "" {
		out["Mcp-Name"] = p.Name
	}
	return out
}

// withMeta adds the _meta of a stateless request to a JSON-RPC request.
func withMeta(raw, version string) string {
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil {
		return raw
	}
	p, ok := m["params"].(map[string]any)
	if !ok {
		if m["params"] != nil {
			return raw
		}
		p = map[string]any{}
	}
	p["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	m["params"] = p
	b, _ := json.Marshal(m)
	return string(b)
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
