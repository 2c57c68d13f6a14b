package registry_test

import (
	"crypto/tls"
	"encoding/pem"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/internal/faultproxy"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// tlsSpace is a real daemon serving TLS with a certificate of a test CA,
// counting the TLS handshakes it is offered, behind a proxy that counts the
// connections open to it.
type tlsSpace struct {
	d      *spacesdtest.Daemon
	fp     string // the certificate's pin
	ca     *tlstest.CA
	proxy  *faultproxy.Proxy
	hellos *atomic.Int64
}

// url reaches the daemon through the proxy.
func (s *tlsSpace) url() string { return "https://" + s.proxy.Addr }

func startTLSSpace(t testing.TB) *tlsSpace {
	t.Helper()
	ca := tlstest.NewCA(t)
	cert := ca.Issue(t, "127.0.0.1")
	fp := api.CertFingerprint(cert.Certificate[0])
	cfg := server.NewTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil })
	hellos := tlstest.CountHandshakes(cfg)
	d := spacesdtest.Start(t, spacesdtest.Options{TLS: cfg, ClientTLS: client.TLS{Fingerprint: fp}})
	p, err := faultproxy.Start(strings.TrimPrefix(d.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &tlsSpace{d: d, fp: fp, ca: ca, proxy: p, hellos: hellos}
}

func execTrue(t testing.TB, r *registry.Registry, id string) *client.Client {
	t.Helper()
	c, _, err := r.Client(id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(t.Context(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}})
	if err != nil {
		t.Fatalf("exec on %s: %v", id, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec on %s: exit %d", id, res.ExitCode)
	}
	return c
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Calls on one TLS Space share one client, so one connection and one
// handshake. A token rotated by adding the Space again, from this registry
// value or another one on the same home (another bridge process), gets a
// new client, and the old one's connection is closed; a Space removed
// elsewhere has its client dropped at the next read. Other Spaces keep
// theirs.
func TestOneClientPerSpace(t *testing.T) {
	s := startTLSSpace(t)
	home := t.TempDir()
	r, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	other, err := registry.Open(home) // as another bridge process
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	ctx := t.Context()
	if _, err := r.AddEntry(ctx, registry.Entry{Name: "s", URL: s.url(), Token: s.d.Token, Fingerprint: s.fp}); err != nil {
		t.Fatal(err)
	}
	// A second Space on the same daemon, reached directly (not through the
	// proxy, whose counts are s's alone).
	if _, err := r.AddEntry(ctx, registry.Entry{Name: "t", URL: s.d.URL, Token: s.d.Token, Fingerprint: s.fp}); err != nil {
		t.Fatal(err)
	}
	first := execTrue(t, r, "s")
	ct := execTrue(t, r, "t")
	for range 10 {
		if c := execTrue(t, r, "s"); c != first {
			t.Fatal("a second call on an unchanged Space got another client")
		}
	}
	list, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := r.ClientFor(list[0]); err != nil || c != first {
		t.Fatalf("ClientFor of the listed entry: %p, %v; want the one client %p", c, err, first)
	}
	if n := s.proxy.Accepted.Load(); n != 1 {
		t.Fatalf("11 calls on one Space opened %d connections, want 1", n)
	}
	// "s" and "t": one handshake each.
	if n := s.hellos.Load(); n != 2 {
		t.Fatalf("12 calls on two Spaces made %d TLS handshakes, want 2", n)
	}

	// The daemon's token rotates; the other process adds s again with it.
	tok2 := spacesdtest.Token()
	s.d.Auth.Rotate(tok2)
	if _, err := other.AddEntry(ctx, registry.Entry{Name: "s", URL: s.url(), Token: tok2, Fingerprint: s.fp}); err != nil {
		t.Fatal(err)
	}
	if c := execTrue(t, r, "s"); c == first {
		t.Fatal("the Space re-added with a new token kept its old client")
	}
	waitFor(t, "the old client's connection closed", func() bool { return s.proxy.Open.Load() == 1 })
	if n := s.proxy.Accepted.Load(); n != 2 {
		t.Fatalf("connections after the rotation: %d, want 2", n)
	}
	// t's token is stale now, but its entry did not change: same client.
	if c, _, err := r.Client("t"); err != nil || c != ct {
		t.Fatalf("an unchanged Space lost its client when another changed: %v", err)
	}

	// Removed by the other process: the next read here drops the client.
	if err := other.Remove("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.List(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removed Space's connection closed", func() bool { return s.proxy.Open.Load() == 0 })
	if _, _, err := r.Client("s"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("a removed Space resolved: %v", err)
	}
}

// A CA file rewritten in place (the Space's certificate now signed by
// another CA, the old one no longer trusted) takes effect at the next call,
// though the old client still holds a connection the old trust verified.
func TestClientFollowsTheCAFile(t *testing.T) {
	s := startTLSSpace(t)
	caFile := s.ca.WriteCA(t, t.TempDir())
	r, err := registry.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if _, err := r.AddEntry(t.Context(), registry.Entry{Name: "s", URL: s.url(), Token: s.d.Token, CAFile: caFile}); err != nil {
		t.Fatal(err)
	}
	first := execTrue(t, r, "s")
	rewrite := func(ca *tlstest.CA, at time.Time) {
		t.Helper()
		if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644); err != nil {
			t.Fatal(err)
		}
		// A rewrite a person makes lands seconds later; set the time so
		// that the test does not rest on the file system's clock grain.
		if err := os.Chtimes(caFile, at, at); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	rewrite(tlstest.NewCA(t), now.Add(time.Minute))
	c, _, err := r.Client("s")
	if err != nil {
		t.Fatal(err)
	}
	if c == first {
		t.Fatal("the rewritten CA file kept the old client")
	}
	_, err = c.Exec(t.Context(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}})
	if err == nil || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("exec with a CA file that no longer trusts the Space: %v", err)
	}
	rewrite(s.ca, now.Add(2*time.Minute))
	execTrue(t, r, "s")
	waitFor(t, "the first client's connection closed", func() bool { return s.proxy.Open.Load() == 1 })
}

// Many calls at once on one Space, while other Spaces are added, re-added
// with new tokens and removed, share the Space's one client: no more
// handshakes than calls in flight at once. Run with -race.
func TestClientsConcurrent(t *testing.T) {
	s := startTLSSpace(t)
	home := t.TempDir()
	r, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	other, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	ctx := t.Context()
	if _, err := r.AddEntry(ctx, registry.Entry{Name: "s", URL: s.url(), Token: s.d.Token, Fingerprint: s.fp}); err != nil {
		t.Fatal(err)
	}
	const workers, calls = 8, 10
	var wg sync.WaitGroup
	stop := make(chan struct{})
	churn := func(reg *registry.Registry, name string) {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e := registry.Entry{Name: name, URL: "http://127.0.0.1:1", Token: name + "-" + string(rune('a'+i%3))}
			if _, err := reg.AddEntry(ctx, e); err != nil {
				t.Error(err)
				return
			}
			if _, _, err := reg.Client(name); err != nil {
				t.Error(err)
				return
			}
			if i%4 == 3 {
				if err := reg.Remove(name); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}
	wg.Add(2)
	go churn(r, "u")
	go churn(other, "v")
	var calling sync.WaitGroup
	var seen sync.Map // every client "s" was answered with
	for range workers {
		calling.Add(1)
		go func() {
			defer calling.Done()
			for range calls {
				c, _, err := r.Client("s")
				if err != nil {
					t.Error(err)
					return
				}
				seen.Store(c, true)
				if _, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"true"}}}); err != nil {
					t.Error(err)
					return
				}
				if _, err := r.List(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	calling.Wait()
	close(stop)
	wg.Wait()
	n := 0
	seen.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d calls on one unchanged Space got %d clients, want 1", workers*calls, n)
	}
	// A call may dial while another's connection frees up, and then take
	// that one, leaving its own idle: a few more connections than calls
	// at once, never one per call.
	if n := s.hellos.Load(); n > 2*workers {
		t.Fatalf("%d calls, %d at a time, made %d TLS handshakes, want at most %d", workers*calls, workers, n, 2*workers)
	}
}

// BenchmarkTLSSpaceExec is exec "true" on a Space serving TLS (pinned),
// its client taken from the registry per call as a tool call takes it: the
// registry's one client of the Space, beside a client built per call (as
// the bridge did before it kept one), same run. The per-call client's idle
// connection is closed after each call, so that they do not pile up.
func BenchmarkTLSSpaceExec(b *testing.B) {
	s := startTLSSpace(b)
	r, err := registry.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	if _, err := r.AddEntry(b.Context(), registry.Entry{Name: "s", URL: s.url(), Token: s.d.Token, Fingerprint: s.fp}); err != nil {
		b.Fatal(err)
	}
	req := api.ExecRequest{Command: api.Command{Argv: []string{"true"}}}
	for _, c := range []struct {
		name   string
		client func() (*client.Client, func())
	}{
		{"one_client", func() (*client.Client, func()) {
			c, _, err := r.Client("s")
			if err != nil {
				b.Fatal(err)
			}
			return c, func() {}
		}},
		{"client_per_call", func() (*client.Client, func()) {
			e, err := r.Resolve("s")
			if err != nil {
				b.Fatal(err)
			}
			c, err := registry.PlainClients(e)
			if err != nil {
				b.Fatal(err)
			}
			return c, c.CloseIdleConnections
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			before := s.hellos.Load()
			for b.Loop() {
				cl, done := c.client()
				if _, err := cl.Exec(b.Context(), req); err != nil {
					b.Fatal(err)
				}
				done()
			}
			b.ReportMetric(float64(s.hellos.Load()-before)/float64(b.N), "handshakes/op")
		})
	}
}
