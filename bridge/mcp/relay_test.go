package mcp_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/relayreg"
	"github.com/trycua/cua-spacesd/bridge/relaytest"
	"github.com/trycua/cua-spacesd/bridge/tools"
)

// loginRelay starts a stand-in relay (bridge/relaytest: the real cua-relay
// is another program; the end-to-end suite runs it) with a user alice, and
// logs the env's bridge home into it.
func loginRelay(t *testing.T, e *env) (*relaytest.Relay, string) {
	t.Helper()
	r := relaytest.Start(t)
	tok := r.AddUser(t, "alice")
	if _, err := e.reg.LoginRelay(t.Context(), registry.RelayLogin{URL: r.URL, Token: tok, Fingerprint: r.Fingerprint}); err != nil {
		t.Fatalf("relay login: %v", err)
	}
	return r, tok
}

// A relay:<computer> reaches its daemon through the relay: space_bash runs
// there, every call over the one cached client of that Space (one TLS
// handshake with the relay for many calls), and list_spaces shows the
// account's computers beside the local Spaces, online as the relay says.
func TestRelaySpaceThroughTheRelay(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	r, tok := loginRelay(t, e)
	r.Attach("alice", "box", e.daemon.URL, e.daemon.Token)
	r.Attach("alice", "gone", e.daemon.URL, e.daemon.Token)
	r.Attach("bob", "bobs", e.daemon.URL, e.daemon.Token)

	before := r.Handshakes.Load()
	for i := range 5 {
		res := call(t, cs, "space_bash", map[string]any{"space": "relay:box", "command": "echo through-the-relay"})
		var out struct {
			Stdout   string `json:"stdout"`
			ExitCode int    `json:"exit_code"`
		}
		structured(t, res, &out)
		if res.IsError || out.Stdout != "through-the-relay\n" || out.ExitCode != 0 {
			t.Fatalf("call %d: space_bash on relay:box: %s", i, text(res))
		}
	}
	if n := r.Requests("POST /c/box/v1/exec"); n != 5 {
		t.Errorf("the relay proxied %d execs to box, want 5", n)
	}
	if got := r.Handshakes.Load() - before; got != 1 {
		t.Errorf("5 calls on relay:box made %d TLS handshakes with the relay, want 1 (one client per Space)", got)
	}

	// An idempotency key travels through the relay unchanged: the same
	// call twice runs once (a counter file proves it).
	counter := filepath.Join(t.TempDir(), "runs")
	for range 2 {
		res := call(t, cs, "space_bash", map[string]any{"space": "relay:box", "command": "echo run >> " + counter, "idempotency_key": "relay-once"})
		if res.IsError {
			t.Fatalf("space_bash with a key: %s", text(res))
		}
	}
	if b, err := os.ReadFile(counter); err != nil || string(b) != "run\n" {
		t.Fatalf("a keyed call repeated through the relay ran %q (%v), want once", b, err)
	}
	if strings.Contains(e.logText(), tok) {
		t.Fatal("the bridge logged the relay token")
	}

	// Another user's computer is not found, as one that does not exist.
	if k := errKind(t, call(t, cs, "space_bash", map[string]any{"space": "relay:bobs", "command": "true"})); k != "not_found" {
		t.Errorf("another user's computer: kind %s, want not_found", k)
	}
	// An offline computer: kind relay.
	r.Detach("gone")
	if k := errKind(t, call(t, cs, "space_bash", map[string]any{"space": "relay:gone", "command": "true"})); k != "relay" {
		t.Errorf("offline computer: kind %s, want relay", k)
	}

	var list tools.SpaceList
	structured(t, call(t, cs, "list_spaces", nil), &list)
	got := map[string]tools.SpaceView{}
	for _, v := range list.Spaces {
		got[v.Space] = v
	}
	if v := got["s1"]; !v.Online {
		t.Errorf("local s1: %+v", v)
	}
	if v := got["relay:box"]; !v.Online || v.Name != "box" || !slices.Contains(v.Features, "shell") {
		t.Errorf("relay:box: %+v, want online with its features", v)
	}
	if v, ok := got["relay:gone"]; !ok || v.Online {
		t.Errorf("relay:gone: %+v (listed %v), want listed offline", v, ok)
	}
	if _, ok := got["relay:bobs"]; ok {
		t.Errorf("another user's computer is listed: %+v", list)
	}
	if list.RelayError != "" {
		t.Errorf("relay_error %q with a relay that answers", list.RelayError)
	}

	// A relay that cannot be reached leaves the local Spaces listed.
	r.Close()
	structured(t, call(t, cs, "list_spaces", nil), &list)
	if len(list.Spaces) != 1 || list.Spaces[0].Space != "s1" || !list.Spaces[0].Online || list.RelayError == "" {
		t.Errorf("with the relay down: %+v, want s1 online and a relay_error", list)
	}
}

// relay_register_space publishes a Space: a new computer, its token handed
// to the Space (PUT /v1/relay), the seed's answer; again, nothing changes;
// after the Space restarted, it is attached again. relay_unregister_space
// detaches it and deletes the computer. The stand-in relay takes no
// attach, so the happy path runs against relaytest's SpaceFront, which
// serves /v1/relay in front of
// the real daemon (test/relay runs the real daemon's attach with the real
// relay).
func TestRelayRegisterSpace(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)

	// Not logged in: unauthenticated, pointing at relay login.
	res := call(t, cs, "relay_register_space", map[string]any{"space": "s1"})
	if k := errKind(t, res); k != "unauthenticated" {
		t.Fatalf("not logged in: kind %s (%s)", k, text(res))
	}
	r, _ := loginRelay(t, e)

	// Bad arguments.
	for _, args := range []map[string]any{
		{"space": "s1", "name": "-bad"},
		{"space": "relay:box"},
	} {
		if k := errKind(t, call(t, cs, "relay_register_space", args)); k != "invalid_argument" {
			t.Errorf("%v: kind %s, want invalid_argument", args, k)
		}
	}
	if k := errKind(t, call(t, cs, "relay_register_space", map[string]any{"space": "nope"})); k != "not_found" {
		t.Errorf("unknown Space: kind %s", k)
	}

	f := r.Front(t, e.daemon.URL, e.daemon.Token)
	if r := call(t, cs, "add_space", map[string]any{"url": f.URL, "token": e.daemon.Token, "name": "front"}); r.IsError {
		t.Fatalf("add_space: %s", text(r))
	}
	register := func(args map[string]any) relayreg.Registered {
		t.Helper()
		res := call(t, cs, "relay_register_space", args)
		if res.IsError {
			t.Fatalf("relay_register_space %v: %s", args, text(res))
		}
		var got relayreg.Registered
		structured(t, res, &got)
		return got
	}
	want := relayreg.Registered{Space: "front", RelaySpace: "relay:front", Machine: "front", URL: r.URL + "/c/front", Online: true}
	if got := register(map[string]any{"space": "front"}); got != want {
		t.Fatalf("register: %+v, want %+v", got, want)
	}
	if f.Puts.Load() != 1 || !r.Online("front") {
		t.Fatalf("after register: %d PUT /v1/relay, online %v", f.Puts.Load(), r.Online("front"))
	}
	// Idempotent: attached to this relay under that name and connected.
	if got := register(map[string]any{"space": "front"}); got != want {
		t.Fatalf("register again: %+v", got)
	}
	if f.Puts.Load() != 1 || r.Requests("POST /v1/computers") != 1 {
		t.Fatalf("register again changed things: %d PUTs, %d computers made", f.Puts.Load(), r.Requests("POST /v1/computers"))
	}
	// The Space restarted without its attachment: attached again.
	f.Restart()
	if got := register(map[string]any{"space": "front"}); got != want {
		t.Fatalf("register after a restart: %+v", got)
	}
	if f.Puts.Load() != 2 {
		t.Fatalf("a restarted Space was not attached again: %d PUTs", f.Puts.Load())
	}
	// It is reached as relay:front.
	res = call(t, cs, "space_bash", map[string]any{"space": "relay:front", "command": "echo published"})
	if res.IsError || !strings.Contains(text(res), "published") {
		t.Fatalf("space_bash on relay:front: %s", text(res))
	}
	// Another name.
	if got := register(map[string]any{"space": "front", "name": "desk-2"}); got.RelaySpace != "relay:desk-2" || got.Machine != "desk-2" || !got.Online {
		t.Fatalf("register with a name: %+v", got)
	}

	unregister := func(space string) relayreg.Unregistered {
		t.Helper()
		res := call(t, cs, "relay_unregister_space", map[string]any{"space": space})
		if res.IsError {
			t.Fatalf("relay_unregister_space %s: %s", space, text(res))
		}
		var got relayreg.Unregistered
		structured(t, res, &got)
		return got
	}
	if got := unregister("front"); got != (relayreg.Unregistered{Space: "front", Unregistered: true}) {
		t.Fatalf("unregister: %+v", got)
	}
	if r.Exists("desk-2") {
		t.Fatal("the computer is still on the relay")
	}
	if got := unregister("front"); got.Unregistered {
		t.Fatalf("unregister again: %+v, want unregistered false", got)
	}
	// relay:<computer>: its record goes (front, left from the first name).
	if got := unregister("relay:front"); !got.Unregistered || r.Exists("front") {
		t.Fatalf("unregister relay:front: %+v, exists %v", got, r.Exists("front"))
	}
	if got := unregister("relay:front"); got.Unregistered {
		t.Fatalf("unregister relay:front again: %+v", got)
	}
	// Another user's computer is not this user's to remove, nor told apart.
	r.Attach("bob", "bobs", e.daemon.URL, e.daemon.Token)
	if got := unregister("relay:bobs"); got.Unregistered || !r.Exists("bobs") {
		t.Fatalf("unregister another user's computer: %+v, exists %v", got, r.Exists("bobs"))
	}
}
