package browser_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
)

// testRelay is a cua-relay node in the test process (relayd, its TURN on
// loopback over UDP and TCP), its certificate from a test CA that
// Chromium is told to trust by the key alone (as it would a public CA's
// certificate of the relay), and a bridge home logged in as its user.
type testRelay struct {
	addr  string
	token string
	home  string
	relay *relayd.Relay
	// chromiumFlag makes Chromium trust the relay's certificate.
	chromiumFlag string
}

func startTestRelay(t testing.TB) *testRelay {
	t.Helper()
	ca := tlstest.NewCA(t)
	caFile := ca.WriteCA(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cert := ca.Issue(t, "127.0.0.1")
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	spki := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	logs := &testenv.SyncBuffer{}
	r, err := relayd.Start(context.Background(), ln, relayd.Options{DataDir: t.TempDir(), Node: "relay-1",
		TLS: relayd.TLSConfig(cert), Logger: slog.New(slog.NewTextHandler(logs, nil)), Version: "test",
		TURN: &turnsvc.Options{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.Close()
		if t.Failed() {
			t.Logf("the relay's log:\n%s", tail([]byte(logs.String()), 8000))
		}
	})
	if _, err := r.Store.CreateUser(t.Context(), "alice", ""); err != nil {
		t.Fatal(err)
	}
	_, tok, err := r.Store.CreateUserToken(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	tr := &testRelay{addr: ln.Addr().String(), token: tok, home: t.TempDir(), relay: r,
		chromiumFlag: "--ignore-certificate-errors-spki-list=" + base64.StdEncoding.EncodeToString(spki[:])}
	tokFile := filepath.Join(tr.home, "relay.token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr.bridge(t, "relay", "login", "--url", "https://"+tr.addr, "--token-file", tokFile, "--ca", caFile)
	return tr
}

// bridge runs a cua-bridge command in the relay user's home and answers
// its output (the test fails when it fails).
func (tr *testRelay) bridge(t testing.TB, args ...string) string {
	t.Helper()
	var out, errb testenv.SyncBuffer
	if code := cli.Run(t.Context(), cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Home: tr.home}, args[0], args[1:]); code != 0 {
		t.Fatalf("cua-bridge %s: exit %d: %s%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return strings.TrimSpace(out.String())
}

// withOffer sets key=value in the query of a viewer link's offer URL
// (in its fragment), as a person adds ?ice=relay to force TURN.
func withOffer(t testing.TB, link, key, value string) string {
	t.Helper()
	page, fragment, _ := strings.Cut(link, "#")
	q, err := url.ParseQuery(fragment)
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	offer, err := url.Parse(q.Get("offer"))
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	oq := offer.Query()
	oq.Set(key, value)
	offer.RawQuery = oq.Encode()
	q.Set("offer", offer.String())
	return page + "#" + q.Encode()
}
