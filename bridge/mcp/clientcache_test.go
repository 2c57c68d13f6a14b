package mcp_test

import (
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/faultproxy"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// tlsSpace is a real daemon serving TLS, counting the handshakes it is
// offered, behind a proxy that counts the connections to it.
type tlsSpace struct {
	d      *spacesdtest.Daemon
	fp     string
	proxy  *faultproxy.Proxy
	hellos *atomic.Int64
}

func startTLSSpace(t testing.TB) *tlsSpace {
	t.Helper()
	cert := tlstest.NewCA(t).Issue(t, "127.0.0.1")
	cfg := server.NewTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil })
	hellos := tlstest.CountHandshakes(cfg)
	fp := api.CertFingerprint(cert.Certificate[0])
	d := spacesdtest.Start(t, spacesdtest.Options{TLS: cfg, ClientTLS: client.TLS{Fingerprint: fp}})
	p, err := faultproxy.Start(strings.TrimPrefix(d.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &tlsSpace{d: d, fp: fp, proxy: p, hellos: hellos}
}

func (s *tlsSpace) addArgs(name, token string) map[string]any {
	return map[string]any{"url": "https://" + s.proxy.Addr, "token": token, "name": name, "fingerprint": s.fp}
}

// Tool calls on a TLS Space reuse its one client: the probe of add_space,
// then every call (the bridge's own tools and the MCP hop of call_tool)
// go over one connection, with one TLS handshake. (A client per call made
// a handshake per call, and left its connection open until the
// transport's idle timeout.)
func TestTLSSpaceOneHandshake(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	s := startTLSSpace(t)
	if r := call(t, cs, "add_space", s.addArgs("tls", s.d.Token)); r.IsError {
		t.Fatalf("add_space: %s", text(r))
	}
	const calls = 20
	for i := range calls {
		want := fmt.Sprintf("call-%d", i)
		if r := call(t, cs, "space_bash", map[string]any{"space": "tls", "command": "echo " + want}); r.IsError || !strings.Contains(text(r), want) {
			t.Fatalf("space_bash: %s", text(r))
		}
	}
	if n := s.hellos.Load(); n != 1 {
		t.Fatalf("add_space and %d calls on a TLS Space made %d TLS handshakes, want 1", calls, n)
	}
	if n := s.proxy.Accepted.Load(); n != 1 {
		t.Fatalf("add_space and %d calls on a TLS Space opened %d connections, want 1", calls, n)
	}
	// call_tool goes over an MCP session with the daemon, on the same
	// client. Its setup may open one more connection (the SDK still reads
	// the answer to initialize when it posts notifications/initialized),
	// whenever it gets to it: a count taken right after the first call
	// raced it. So the whole session may cost at most 2 handshakes, and
	// the calls none: one per call would make calls+1 more.
	for range calls + 1 {
		if r := call(t, cs, "call_tool", map[string]any{"space": "tls", "tool": "space_bash", "arguments": map[string]any{"command": "echo hop"}}); r.IsError || !strings.Contains(text(r), "hop") {
			t.Fatalf("call_tool: %s", text(r))
		}
	}
	if n := s.hellos.Load(); n > 3 {
		t.Fatalf("%d call_tool calls on one MCP session made %d TLS handshakes after the first, want at most 2 (the session's setup)", calls+1, n-1)
	}
}

// A Space added again with a rotated token is reached with the new token
// at the next call (no stale client), and the old client's connection is
// closed; a removed Space's client is dropped, and its connection closed.
func TestTLSSpaceReAddedAndRemoved(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	s := startTLSSpace(t)
	// bash answers the kind of a failed call, "" for success.
	bash := func(want string) string {
		t.Helper()
		r := call(t, cs, "space_bash", map[string]any{"space": "tls", "command": "echo " + want})
		if r.IsError {
			return errKind(t, r) + ": " + text(r)
		}
		if !strings.Contains(text(r), want) {
			t.Fatalf("space_bash: %s", text(r))
		}
		return ""
	}
	if r := call(t, cs, "add_space", s.addArgs("tls", s.d.Token)); r.IsError {
		t.Fatalf("add_space: %s", text(r))
	}
	if msg := bash("first"); msg != "" {
		t.Fatal(msg)
	}

	tok2 := spacesdtest.Token()
	s.d.Auth.Rotate(tok2)
	if msg := bash("stale"); !strings.HasPrefix(msg, string(api.KindUnauthenticated)+":") {
		t.Fatalf("space_bash with the rotated-out token: %q", msg)
	}
	if r := call(t, cs, "add_space", s.addArgs("tls", tok2)); r.IsError {
		t.Fatalf("add_space with the new token: %s", text(r))
	}
	if msg := bash("rotated"); msg != "" {
		t.Fatalf("space_bash after the Space was added again with the new token: %s", msg)
	}
	eventually(t, "the old client's connection closed", func() bool { return s.proxy.Open.Load() == 1 })
	if n := s.hellos.Load(); n != 2 {
		t.Fatalf("TLS handshakes: %d, want 2 (one per token)", n)
	}

	if r := call(t, cs, "remove_space", map[string]any{"space": "tls"}); r.IsError {
		t.Fatalf("remove_space: %s", text(r))
	}
	eventually(t, "the removed Space's connection closed", func() bool { return s.proxy.Open.Load() == 0 })
	if msg := bash("gone"); !strings.HasPrefix(msg, string(api.KindNotFound)+":") {
		t.Fatalf("space_bash on a removed Space: %q", msg)
	}
	// Added once more, as it was at first: a new client, which works.
	if r := call(t, cs, "add_space", s.addArgs("tls", tok2)); r.IsError {
		t.Fatalf("add_space again: %s", text(r))
	}
	if msg := bash("back"); msg != "" {
		t.Fatal(msg)
	}
}

// Calls at once on one TLS Space, with list_spaces probing it meanwhile,
// share its client: a few connections, not one per call. Run with -race.
func TestTLSSpaceConcurrentCalls(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	s := startTLSSpace(t)
	if r := call(t, cs, "add_space", s.addArgs("tls", s.d.Token)); r.IsError {
		t.Fatalf("add_space: %s", text(r))
	}
	const workers, calls = 6, 5
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				want := fmt.Sprintf("w%d-%d", w, i)
				r := call(t, cs, "space_bash", map[string]any{"space": "tls", "command": "echo " + want})
				if r.IsError || !strings.Contains(text(r), want) {
					t.Errorf("space_bash: %s", text(r))
					return
				}
				if w == 0 {
					if r := call(t, cs, "list_spaces", nil); r.IsError || !strings.Contains(text(r), "tls") {
						t.Errorf("list_spaces: %s", text(r))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	// A call may dial while another's connection frees up and then take
	// that one: a few more connections than calls at once, never one per
	// call.
	if n := s.hellos.Load(); n > 2*(workers+1) {
		t.Fatalf("%d calls, %d at a time, made %d TLS handshakes", workers*calls, workers+1, n)
	}
}
