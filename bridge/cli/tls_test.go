package cli_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// A Space serving TLS is added as https:// with its pinned fingerprint or
// a CA file, and the commands reach it; a wrong pin, a missing trust, or
// trust settings on an http URL are refused before anything is written.
func TestSpaceOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t)
	cert := ca.Issue(t, "127.0.0.1")
	fp := api.CertFingerprint(cert.Certificate[0])
	caFile := ca.WriteCA(t, t.TempDir())
	d := spacesdtest.Start(t, spacesdtest.Options{
		TLS:       server.NewTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }),
		ClientTLS: client.TLS{Fingerprint: fp},
	})
	ctx := t.Context()
	home := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(d.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	other := api.CertFingerprint([]byte("not the daemon's"))
	for name, args := range map[string][]string{
		"no trust":    {"space", "add", "bad", d.URL, "--token-file", tokenFile},
		"wrong pin":   {"space", "add", "bad", d.URL, "--token-file", tokenFile, "--fingerprint", other},
		"bad pin":     {"space", "add", "bad", d.URL, "--token-file", tokenFile, "--fingerprint", "sha256:zz"},
		"http + pin":  {"space", "add", "bad", strings.Replace(d.URL, "https", "http", 1), "--token-file", tokenFile, "--fingerprint", fp},
		"no CA there": {"space", "add", "bad", d.URL, "--token-file", tokenFile, "--ca-file", filepath.Join(home, "none.pem")},
	} {
		if r := run(ctx, home, "", args...); r.code == 0 {
			t.Errorf("space add with %s succeeded: %s", name, r.stdout)
		}
	}
	if r := run(ctx, home, "", "space", "ls", "--json"); strings.Contains(r.stdout, `"bad"`) {
		t.Fatalf("a refused Space was registered: %s", r.stdout)
	}

	if r := run(ctx, home, "", "space", "add", "pinned", d.URL, "--token-file", tokenFile, "--fingerprint", strings.ToUpper(fp)); r.code != 0 {
		t.Fatalf("space add with the pin: %d %s", r.code, r.stderr)
	}
	if r := run(ctx, home, "", "space", "add", "byca", d.URL, "--token-file", tokenFile, "--ca-file", caFile); r.code != 0 {
		t.Fatalf("space add with the CA file: %d %s", r.code, r.stderr)
	}
	for _, name := range []string{"pinned", "byca"} {
		if r := run(ctx, home, "", "exec", name, "--", "echo", "over TLS"); r.code != 0 || r.stdout != "over TLS\n" {
			t.Fatalf("exec on %s: %d %q %s", name, r.code, r.stdout, r.stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, "spaces.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), d.Token) || !strings.Contains(string(b), fp) || !strings.Contains(string(b), `"ca_file": "`+caFile+`"`) {
		t.Fatalf("spaces.json holds:\n%s", b)
	}
}
