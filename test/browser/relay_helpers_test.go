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
	// caFile is the test CA's certificate, as a bridge logs in with it.
	caFile string
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
	tr := &testRelay{addr: ln.Addr().String(), relay: r, caFile: caFile,
		chromiumFlag: "--ignore-certificate-errors-spki-list=" + base64.StdEncoding.EncodeToString(spki[:])}
	tr.home, tr.token = tr.user(t, "alice")
	return tr
}

// user adds a user to the relay and answers the home of a bridge logged
// in as them, and their token.
func (tr *testRelay) user(t testing.TB, name string) (home, token string) {
	t.Helper()
	if _, err := tr.relay.Store.CreateUser(t.Context(), name, ""); err != nil {
		t.Fatal(err)
	}
	_, tok, err := tr.relay.Store.CreateUserToken(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	home = t.TempDir()
	tokFile := filepath.Join(home, "relay.token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bridgeIn(t, home, "relay", "login", "--url", "https://"+tr.addr, "--token-file", tokFile, "--ca", tr.caFile)
	return home, tok
}

// bridge runs a cua-bridge command in the relay user's home and answers
// its output (the test fails when it fails).
func (tr *testRelay) bridge(t testing.TB, args ...string) string {
	t.Helper()
	return bridgeIn(t, tr.home, args...)
}

// bridgeIn runs a cua-bridge command in home (see testRelay.bridge).
func bridgeIn(t testing.TB, home string, args ...string) string {
	t.Helper()
	var out, errb testenv.SyncBuffer
	if code := cli.Run(t.Context(), cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Home: home}, args[0], args[1:]); code != 0 {
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
