package server_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// A web page the user opens must not reach a daemon without a token. Each
// case is a request a browser sends for a page with no pre-check, or after
// a DNS rebinding (the page's own name now points at 127.0.0.1). The exec
// of every case would create a file; none may.
func TestWebPagesCannotDriveATokenlessDaemon(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{NoToken: true})
	u, _ := url.Parse(d.URL)
	marker := filepath.Join(t.TempDir(), "ran")
	exec := `{"shell":"touch ` + marker + `"}`
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		kind                     api.Kind
	}{
		{"form post from another site", http.MethodPost, api.PathExec, exec,
			map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403, api.KindForbidden},
		{"json from another site", http.MethodPost, api.PathExec, exec,
			map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, api.KindForbidden},
		{"a local page of another origin", http.MethodPost, api.PathExec, exec,
			map[string]string{"Content-Type": "application/json", "Origin": "http://localhost:5173"}, 403, api.KindForbidden},
		{"a sandboxed page", http.MethodPost, api.PathExec, exec,
			map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403, api.KindForbidden},
		{"rebinding, same origin", http.MethodPost, api.PathExec, exec,
			map[string]string{"Content-Type": "application/json", "Host": "attacker.example:" + u.Port(), "Origin": "http://attacker.example:" + u.Port()}, 403, api.KindForbidden},
		{"rebinding read of a file", http.MethodGet, api.PathFileContent + "?path=" + url.QueryEscape(secret), "",
			map[string]string{"Host": "attacker.example:" + u.Port()}, 403, api.KindForbidden},
		{"rebinding health", http.MethodGet, "/health", "",
			map[string]string{"Host": "attacker.example:" + u.Port()}, 403, api.KindForbidden},
		{"text/plain without an origin", http.MethodPost, api.PathExec, exec,
			map[string]string{"Content-Type": "text/plain"}, 415, api.KindInvalidArgument},
		{"no content type", http.MethodPost, api.PathExec, exec,
			map[string]string{}, 415, api.KindInvalidArgument},
		{"a blob to stdin", http.MethodPost, "/v1/processes/p1/stdin", "x",
			map[string]string{}, 415, api.KindInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, d.URL+tc.path, body)
			for k, v := range tc.hdr {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), `"kind":"`+string(tc.kind)+`"`) {
				t.Errorf("answered %d %s, want %d %s", resp.StatusCode, b, tc.status, tc.kind)
			}
			if strings.Contains(string(b), "s3cret") {
				t.Error("the file's content leaked")
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a web page ran a command on the daemon")
	}

	// A rebinding page cannot open a stream either.
	h := http.Header{"Origin": {"http://attacker.example:" + u.Port()}}
	ws := "ws" + strings.TrimPrefix(d.URL, "http") + api.PathFileWatch + "?path=" + url.QueryEscape(t.TempDir())
	dialer := websocket.Dialer{NetDial: nil}
	reqHost := *u
	reqHost.Host = "attacker.example:" + u.Port()
	h.Set("Host", reqHost.Host)
	if conn, resp, err := dialer.DialContext(t.Context(), ws, h); err == nil {
		conn.Close()
		t.Fatal("a rebinding page opened a file watch")
	} else if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("websocket from a rebinding page: %v (%v), want 403", err, resp)
	}

	// The daemon's own pages, and clients that are no browser, still work.
	for name, origin := range map[string]string{"no origin": "", "its own page": d.URL} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, d.URL+api.PathExec, strings.NewReader(`{"argv":["true"]}`))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: exec answered %d", name, resp.StatusCode)
		}
	}
}

// With a token, a rebinding Host does not matter (the page has no token),
// so names other than loopback ones work: a Space is reached by its name.
func TestTokenDaemonAnswersAnyHostName(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, d.URL+"/v1/capabilities", nil)
	req.Host = "my-space.internal:3211"
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("capabilities by a host name: %d", resp.StatusCode)
	}
}
