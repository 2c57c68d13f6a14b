package registry_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/relaytest"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// Login asks the relay who the token is (a wrong one is refused and
// nothing is kept), keeps the token alone in a 0600 file and the rest
// apart, and a second Registry on the same home sees it; logout forgets it.
func TestRelayLogin(t *testing.T) {
	r := relaytest.Start(t)
	tok := r.AddUser(t, "alice")
	home := t.TempDir()
	reg, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	other, _ := protocol.NewToken(protocol.TokenUser)
	computerTok, _ := protocol.NewToken(protocol.TokenComputer)
	for _, tc := range []struct {
		name string
		l    registry.RelayLogin
		kind api.Kind
	}{
		{"unknown token", registry.RelayLogin{URL: r.URL, Token: other, Fingerprint: r.Fingerprint}, api.KindUnauthenticated},
		{"a computer's token", registry.RelayLogin{URL: r.URL, Token: computerTok, Fingerprint: r.Fingerprint}, api.KindInvalidArgument},
		{"a typo", registry.RelayLogin{URL: r.URL, Token: tok[:20] + typo(tok[20]) + tok[21:], Fingerprint: r.Fingerprint}, api.KindInvalidArgument},
		{"untrusted certificate", registry.RelayLogin{URL: r.URL, Token: tok}, api.KindRelay},
		{"wrong pin", registry.RelayLogin{URL: r.URL, Token: tok, Fingerprint: "sha256:" + strings.Repeat("00", 32)}, api.KindRelay},
		{"http to a remote host", registry.RelayLogin{URL: "http://relay.example", Token: tok}, api.KindInvalidArgument},
	} {
		if _, err := reg.LoginRelay(t.Context(), tc.l); api.KindOf(err) != tc.kind {
			t.Errorf("%s: %v, want kind %s", tc.name, err, tc.kind)
		}
	}
	if _, err := os.Stat(filepath.Join(home, registry.RelayFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused login left %s: %v", registry.RelayFile, err)
	}
	if _, err := reg.Relay(); api.KindOf(err) != api.KindUnauthenticated || !strings.Contains(api.AsError(err).Hint, "relay login") {
		t.Fatalf("not logged in: %v", err)
	}

	me, err := reg.LoginRelay(t.Context(), registry.RelayLogin{URL: r.URL + "/", Token: tok + "\n", CAFile: r.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	if me.User.Name != "alice" {
		t.Fatalf("me: %+v", me)
	}
	fi, err := os.Stat(filepath.Join(home, registry.RelayTokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v", err, fi.Mode())
	}
	pub, err := os.ReadFile(filepath.Join(home, registry.RelayFile))
	if err != nil || strings.Contains(string(pub), tok) {
		t.Fatalf("%s holds the token, or cannot be read: %v", registry.RelayFile, err)
	}
	var kept struct{ URL, User string }
	if err := json.Unmarshal(pub, &kept); err != nil || kept.URL != r.URL || kept.User != "alice" {
		t.Fatalf("%s = %s", registry.RelayFile, pub)
	}

	reg2, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Close()
	l, err := reg2.Relay()
	if err != nil || l.Token != tok || l.URL != r.URL || l.CAFile != r.CAFile {
		t.Fatalf("another registry on the home: %+v, %v", l, err)
	}
	e, err := reg2.Resolve("relay:box")
	if err != nil || e.Name != "relay:box" || e.URL != r.URL+"/c/box" || e.Token != tok || e.CAFile != r.CAFile || e.Relay != "box" {
		t.Fatalf("resolve relay:box: %+v, %v", e, err)
	}

	if was, err := reg.LogoutRelay(); !was || err != nil {
		t.Fatalf("logout: %v, %v", was, err)
	}
	if was, err := reg.LogoutRelay(); was || err != nil {
		t.Fatalf("logout again: %v, %v", was, err)
	}
	if _, err := reg2.Resolve("relay:box"); api.KindOf(err) != api.KindUnauthenticated {
		t.Fatalf("resolve after logout: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, registry.RelayTokenFile)); !os.IsNotExist(err) {
		t.Fatalf("logout left the token: %v", err)
	}
}

// A relay computer's client is one per Space while the login lasts, and a
// new login (another token) makes a new one.
func TestRelayClientsFollowTheLogin(t *testing.T) {
	r := relaytest.Start(t)
	tok := r.AddUser(t, "alice")
	reg, err := registry.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if _, err := reg.LoginRelay(t.Context(), registry.RelayLogin{URL: r.URL, Token: tok, Fingerprint: r.Fingerprint}); err != nil {
		t.Fatal(err)
	}
	c1, _, err := reg.Client("relay:box")
	if err != nil {
		t.Fatal(err)
	}
	c2, _, _ := reg.Client("relay:box")
	if c1 != c2 {
		t.Fatal("two clients for relay:box under one login")
	}
	if other, _, _ := reg.Client("relay:desk"); other == c1 {
		t.Fatal("relay:desk shares relay:box's client")
	}
	tok2 := r.AddUser(t, "alice2")
	if _, err := reg.LoginRelay(t.Context(), registry.RelayLogin{URL: r.URL, Token: tok2, Fingerprint: r.Fingerprint}); err != nil {
		t.Fatal(err)
	}
	c3, e, _ := reg.Client("relay:box")
	if c3 == c1 || e.Token != tok2 {
		t.Fatalf("after a new login: same client %v, token %v", c3 == c1, e.Token == tok2)
	}
	if err := reg.Remove("relay:box"); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("remove relay:box: %v", err)
	}
}

// typo is a character other than c: a token's character replaced by
// itself would be no typo (it was "x" one run in dozens).
func typo(c byte) string {
	if c == 'x' {
		return "y"
	}
	return "x"
}
