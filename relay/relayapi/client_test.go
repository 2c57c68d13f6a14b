package relayapi_test

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// server is a small relay stand-in for the client's own tests (the real
// relay is another program): it answers Me to the token "good", the
// envelope otherwise, and a foreign body on /v1/computers/foreign.
func server(t *testing.T) (url, fingerprint, caFile string) {
	t.Helper()
	ca := tlstest.NewCA(t)
	cert := ca.Issue(t, "127.0.0.1")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer good":
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: api.Errorf(api.KindUnauthenticated, "token_invalid").WithReason("token_invalid")})
		case r.URL.Path == relayapi.PathMe:
			_ = json.NewEncoder(w).Encode(relayapi.Me{User: relayapi.User{ID: "u1", Name: "alice"}})
		case r.URL.Path == relayapi.PathComputers && r.Method == http.MethodPost:
			var in relayapi.CreateComputer
			_ = json.NewDecoder(r.Body).Decode(&in)
			_ = json.NewEncoder(w).Encode(relayapi.ComputerToken{Computer: relayapi.Computer{Name: in.Name}, Token: "cuac_x"})
		case r.URL.Path == "/v1/computers/a%20b" || r.URL.RawPath == "/v1/computers/a%20b":
			_ = json.NewEncoder(w).Encode(relayapi.Deleted{Deleted: true})
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("<html>nginx</html>"))
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, api.CertFingerprint(cert.Certificate[0]), ca.WriteCA(t, t.TempDir())
}

func TestClient(t *testing.T) {
	url, fp, caFile := server(t)
	for _, trust := range []relayapi.Trust{{Fingerprint: fp}, {CAFile: caFile}, {CAFile: caFile, Fingerprint: fp}} {
		c, err := relayapi.New(url, "good", trust)
		if err != nil {
			t.Fatal(err)
		}
		me, err := c.Me(t.Context())
		if err != nil || me.User.Name != "alice" {
			t.Fatalf("trust %+v: me %+v, %v", trust, me, err)
		}
	}
	c, _ := relayapi.New(url, "good", relayapi.Trust{Fingerprint: fp})
	ct, err := c.CreateComputer(t.Context(), "box")
	if err != nil || ct.Computer.Name != "box" || ct.Token != "cuac_x" {
		t.Fatalf("create: %+v, %v", ct, err)
	}
	if ok, err := c.DeleteComputer(t.Context(), "a b"); !ok || err != nil {
		t.Fatalf("delete an escaped name: %v, %v", ok, err)
	}
	if got := c.ComputerURL("box"); got != url+"/c/box" {
		t.Errorf("ComputerURL = %s", got)
	}
	if got := c.AttachURLs(); len(got) != 1 || got[0] != "wss://"+strings.TrimPrefix(url, "https://")+relayapi.PathAttach {
		t.Errorf("AttachURLs = %v", got)
	}

	tests := []struct {
		name      string
		token     string
		trust     relayapi.Trust
		call      func(*relayapi.Client) error
		kind      api.Kind
		retryable bool
	}{
		{"refused token: the relay's envelope", "bad", relayapi.Trust{Fingerprint: fp}, func(c *relayapi.Client) error { _, err := c.Me(t.Context()); return err }, api.KindUnauthenticated, false},
		{"not a relay's answer", "good", relayapi.Trust{Fingerprint: fp}, func(c *relayapi.Client) error { _, err := c.Computer(t.Context(), "foreign"); return err }, api.KindRelay, false},
		{"untrusted certificate", "good", relayapi.Trust{}, func(c *relayapi.Client) error { _, err := c.Me(t.Context()); return err }, api.KindRelay, false},
		{"wrong pin", "good", relayapi.Trust{Fingerprint: "sha256:" + strings.Repeat("ab", 32)}, func(c *relayapi.Client) error { _, err := c.Me(t.Context()); return err }, api.KindRelay, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := relayapi.New(url, tt.token, tt.trust)
			if err != nil {
				t.Fatal(err)
			}
			e := api.AsError(tt.call(c))
			if e.Kind != tt.kind || e.Retryable != tt.retryable {
				t.Fatalf("got %s (retryable %v): %v; want %s (retryable %v)", e.Kind, e.Retryable, e, tt.kind, tt.retryable)
			}
		})
	}

	// A relay that cannot be reached: kind relay, retryable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + ln.Addr().String()
	ln.Close()
	c, _ = relayapi.New(dead, "good", relayapi.Trust{Fingerprint: fp})
	if _, err := c.Computers(t.Context()); api.KindOf(err) != api.KindRelay || !api.AsError(err).Retryable {
		t.Fatalf("unreachable relay: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://relay.example/":       "https://relay.example",
		" https://relay.example:8443 ": "https://relay.example:8443",
		"http://127.0.0.1:9000":        "http://127.0.0.1:9000",
		"http://localhost:1/x/?q=1":    "http://localhost:1/x",
		"https://u:p@relay.example":    "https://relay.example",
	} {
		u, err := relayapi.ParseURL(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseURL(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, in := range []string{"", "relay.example", "http://relay.example", "ftp://relay.example", "https://", "wss://relay.example"} {
		if _, err := relayapi.ParseURL(in); api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("ParseURL(%q): %v, want invalid_argument", in, err)
		}
	}
	if _, err := relayapi.New("https://relay.example", "t", relayapi.Trust{Fingerprint: "sha256:zz"}); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("a bad pin: %v", err)
	}
}

// FuzzParseURL: any input answers a canonical URL or invalid_argument,
// and a canonical URL parses to itself.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"https://relay.example", "http://127.0.0.1:1/", "https://[::1]:8443/a/", "http://evil.example", "%", "https://h?x#y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := relayapi.ParseURL(s)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("ParseURL(%q): %v", s, err)
			}
			return
		}
		again, err := relayapi.ParseURL(u.String())
		if err != nil || again.String() != u.String() {
			t.Fatalf("ParseURL(%q) = %s, which parses to %v, %v", s, u, again, err)
		}
	})
}
