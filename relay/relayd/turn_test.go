package relayd_test

import (
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
	"github.com/trycua/cua-spacesd/relay/turnsvc/turnsvctest"
)

// startTURNRelay is startRelayCA with the TURN server on 127.0.0.1: UDP,
// TCP, and TLS with the relay's own certificate.
func startTURNRelay(t *testing.T, dataDir string, ca *tlstest.CA) *testRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limits := relayd.Limits{BadTokenPause: 5 * time.Millisecond}
	r, err := relayd.Start(t.Context(), ln, relayd.Options{
		DataDir: dataDir, Node: "n1", TLS: relayd.TLSConfig(ca.Issue(t, "127.0.0.1")), Limits: limits,
		TURN: &turnsvc.Options{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0"},
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if r.TURN == nil {
		t.Fatal("no TURN server")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &testRelay{Relay: r, t: t, dataDir: dataDir, addr: ln.Addr().String(), pool: pool, ca: ca, limits: limits}
}

// turnAllocate opens an allocation on the relay's TURN server with cred,
// over UDP or over TLS (trusting the relay's CA), and closes it again.
func turnAllocate(t *testing.T, r *testRelay, transport string, cred protocol.TurnCredential) error {
	t.Helper()
	relay, err := turnsvctest.Dial(t, r.TURN, transport, cred, r.tlsConfig()).Allocate()
	if err != nil {
		return err
	}
	return relay.Close()
}

// The TURN secret lives in the store: a credential minted before a restart
// opens an allocation after it; another relay's does not.
func TestTURNCredentialsSurviveRestart(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	r := startTURNRelay(t, dir, ca)
	cred := r.TURN.Credential("box-1", "viewer")
	if cred.UDPPort == 0 || cred.TCPPort == 0 || cred.TLSPort == 0 {
		t.Fatalf("credential %+v: want three ports", cred)
	}
	if err := turnAllocate(t, r, "tls", cred); err != nil {
		t.Fatalf("TURN over TLS with the relay's certificate: %v", err)
	}
	r.Close()

	r = startTURNRelay(t, dir, ca)
	if err := turnAllocate(t, r, "udp", cred); err != nil {
		t.Fatalf("a credential minted before the restart: %v", err)
	}
	other := startTURNRelay(t, t.TempDir(), ca)
	if err := turnAllocate(t, other, "udp", cred); err == nil {
		t.Fatal("another relay's credential opened an allocation")
	}
}

// GET /metrics on the admin socket: the node's counters, its attached
// computers and its TURN series.
func TestMetricsOnAdminSocket(t *testing.T) {
	r := startTURNRelay(t, t.TempDir(), tlstest.NewCA(t))
	alice := r.user("alice")
	sp := r.attach(r.register(alice, "box").Token, echoHandler())
	defer sp.close()
	if err := turnAllocate(t, r, "udp", r.TURN.Credential("box", "space")); err != nil {
		t.Fatal(err)
	}
	text, err := relayd.NewAdminClient(r.dataDir).Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# TYPE cua_relay_sessions gauge\ncua_relay_sessions 1\n",
		"cua_relay_attaches_total 1\n",
		"# TYPE cua_relay_bad_tokens_unpaused_total counter\n",
		"# TYPE cua_relay_data_conns_total counter\n",
		`cua_relay_info{node="n1",version="dev"} 1`,
		"cua_relay_turn_allocations_created_total 1\n",
		`cua_relay_turn_computer_allocations_created_total{computer="box"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	// Every line is a comment or "name[{labels}] value".
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(line, "# TYPE cua_relay_") && !strings.HasPrefix(line, "cua_relay_") || len(strings.Fields(line)) < 2 {
			t.Errorf("not exposition: %q", line)
		}
	}
}

// A relay without TLS cannot run TURN over TLS, and says why.
func TestTURNOverTLSNeedsACertificate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = relayd.Start(t.Context(), ln, relayd.Options{DataDir: t.TempDir(),
		TURN: &turnsvc.Options{TLSAddr: "127.0.0.1:0"}})
	if err == nil || !strings.Contains(err.Error(), "no TLS certificate") {
		t.Fatalf("Start: %v", err)
	}
}
