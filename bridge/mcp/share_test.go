package mcp_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/relayreg"
	"github.com/trycua/cua-spacesd/bridge/tools"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// share_space, unshare_space and space_shares against the stand-in relay
// (bridge/relaytest; the real relay's sharing is tested in test/relay)
// and a real daemon behind the stand-in's SpaceFront: the seed's refusals
// pass through with reason and text, a direct Space is attached on its
// first share and leaves when unshared from everyone while a registered
// one stays, a share again changes the role, and the invitee sees and uses
// the Space as relay:<computer>.
func TestShareSpace(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)

	if k := errKind(t, call(t, cs, "share_space", map[string]any{"space": "s1", "who": "bob"})); k != "unauthenticated" {
		t.Fatalf("not logged in: kind %s", k)
	}
	r, _ := loginRelay(t, e)
	f := r.Front(t, e.daemon.URL, e.daemon.Token)
	if res := call(t, cs, "add_space", map[string]any{"url": f.URL, "token": e.daemon.Token, "name": "front"}); res.IsError {
		t.Fatalf("add_space: %s", text(res))
	}
	share := func(args map[string]any) relayreg.Shared {
		t.Helper()
		res := call(t, cs, "share_space", args)
		if res.IsError {
			t.Fatalf("share_space %v: %s", args, text(res))
		}
		var got relayreg.Shared
		structured(t, res, &got)
		return got
	}
	refusal := func(tool string, args map[string]any) (kind, reason, message string) {
		t.Helper()
		res := call(t, cs, tool, args)
		errKind(t, res)
		var s struct {
			Error struct{ Kind, Reason, Message string }
		}
		structured(t, res, &s)
		return s.Error.Kind, s.Error.Reason, s.Error.Message
	}

	// Bad arguments.
	for _, args := range []map[string]any{
		{"space": "front", "who": "bob", "role": "owner"},
		{"space": "relay:-bad", "who": "bob"},
	} {
		if k := errKind(t, call(t, cs, "share_space", args)); k != "invalid_argument" {
			t.Errorf("%v: kind %s, want invalid_argument", args, k)
		}
	}
	if k := errKind(t, call(t, cs, "share_space", map[string]any{"space": "nope", "who": "bob"})); k != "not_found" {
		t.Errorf("unknown Space: kind %s", k)
	}

	// alice is in no team: the seed's refusal, and the Space attached for
	// that share leaves the relay again.
	kind, reason, msg := refusal("share_space", map[string]any{"space": "front", "who": "bob"})
	if kind != "permission_denied" || reason != relayapi.ReasonSharingNeedsTeam || !strings.Contains(msg, relayapi.MessageSharingNeedsTeam) {
		t.Fatalf("owner in no team: %s %s %q", kind, reason, msg)
	}
	if r.Exists("front") {
		t.Fatal("a refused first share left the Space on the relay")
	}

	r.SetTeam("t1", "alice", "bob")
	r.SetTeam("t2", "carol")
	kind, reason, _ = refusal("share_space", map[string]any{"space": "front", "who": "carol"})
	if kind != "permission_denied" || reason != relayapi.ReasonShareOutsideTeam {
		t.Fatalf("outside the team: %s %s", kind, reason)
	}
	if r.Exists("front") {
		t.Fatal("a refused first share left the Space on the relay")
	}
	puts := f.Puts.Load()

	// The first share attaches the direct Space; viewer by default.
	got := share(map[string]any{"space": "front", "who": "bob"})
	want := relayreg.Shared{Space: "front", Machine: "front", InviteeSpace: "relay:front", URL: r.URL + "/c/front", Online: true,
		Shares: []relayapi.Share{{Who: "bob", Role: protocol.RoleViewer}}}
	if !sameShared(got, want) {
		t.Fatalf("share: %+v, want %+v", got, want)
	}
	if !r.Online("front") || f.Puts.Load() != puts+1 {
		t.Fatalf("the first share did not attach the Space: online %v, %d PUTs", r.Online("front"), f.Puts.Load())
	}
	// Again as editor: the role changes; the whole team too.
	got = share(map[string]any{"space": "front", "who": "bob", "role": "editor"})
	if len(got.Shares) != 1 || got.Shares[0].Role != protocol.RoleEditor || f.Puts.Load() != puts+1 {
		t.Fatalf("re-share as editor: %+v (%d PUTs)", got, f.Puts.Load())
	}
	got = share(map[string]any{"space": "front", "who": "team:t1"})
	if len(got.Shares) != 2 {
		t.Fatalf("share with the team: %+v", got)
	}

	// The invitee (bob, on a bridge of his own) sees relay:front with his
	// role and uses it with the same tools.
	eb := newEnv(t)
	bobTok := r.AddUser(t, "bob")
	if _, err := eb.reg.LoginRelay(t.Context(), registry.RelayLogin{URL: r.URL, Token: bobTok, Fingerprint: r.Fingerprint}); err != nil {
		t.Fatal(err)
	}
	bcs := eb.client(t, nil)
	var list tools.SpaceList
	structured(t, call(t, bcs, "list_spaces", nil), &list)
	i := slices.IndexFunc(list.Spaces, func(v tools.SpaceView) bool { return v.Space == "relay:front" })
	if i < 0 || !list.Spaces[i].Online || list.Spaces[i].Role != "editor" {
		t.Fatalf("the invitee's list_spaces: %+v", list)
	}
	if res := call(t, bcs, "space_bash", map[string]any{"space": "relay:front", "command": "echo shared"}); res.IsError || !strings.Contains(text(res), "shared") {
		t.Fatalf("the invitee's space_bash on relay:front: %s", text(res))
	}

	// Unshare one; the shares and the audit say so, in order.
	r.Connect("front", "team:t1", true)
	res := call(t, cs, "unshare_space", map[string]any{"space": "front", "who": "bob"})
	structured(t, res, &got)
	if res.IsError || len(got.Shares) != 1 || got.Shares[0].Who != "team:t1" || !got.Shares[0].Connected {
		t.Fatalf("unshare bob: %+v (%s)", got, text(res))
	}
	res = call(t, cs, "space_shares", map[string]any{"space": "relay:front", "audit": true})
	structured(t, res, &got)
	var actions []string
	for _, l := range got.Audit {
		actions = append(actions, l.Action+" "+l.Detail)
	}
	if res.IsError || got.Machine != "front" || !slices.Equal(actions, []string{"share bob as viewer", "share bob as editor", "share team:t1 as viewer", "unshare bob"}) {
		t.Fatalf("space_shares audit: %+v (%s)", got, text(res))
	}
	got = relayreg.Shared{}
	structured(t, call(t, cs, "space_shares", map[string]any{"space": "front"}), &got)
	if got.Audit != nil || len(got.Shares) != 1 {
		t.Fatalf("space_shares without audit: %+v", got)
	}

	// Unshare everyone: a Space attached only for sharing leaves.
	res = call(t, cs, "unshare_space", map[string]any{"space": "front"})
	got = relayreg.Shared{}
	structured(t, res, &got)
	if res.IsError || got.Machine != "" || len(got.Shares) != 0 || r.Exists("front") || r.Online("front") {
		t.Fatalf("unshare everyone: %+v, exists %v (%s)", got, r.Exists("front"), text(res))
	}
	structured(t, call(t, cs, "space_shares", map[string]any{"space": "front"}), &got)
	if got.Machine != "" || got.Shares == nil || len(got.Shares) != 0 {
		t.Fatalf("space_shares of a Space off the relay: %+v", got)
	}

	// A Space the owner registered stays on the relay: one registered
	// under another name, and one attached by a share that the owner then
	// registered on purpose.
	if res := call(t, cs, "relay_register_space", map[string]any{"space": "front", "name": "desk"}); res.IsError {
		t.Fatalf("register: %s", text(res))
	}
	got = share(map[string]any{"space": "front", "who": "bob"})
	if got.Machine != "desk" || got.InviteeSpace != "relay:desk" {
		t.Fatalf("share of a registered Space: %+v", got)
	}
	structured(t, call(t, cs, "unshare_space", map[string]any{"space": "front"}), &got)
	if got.Machine != "desk" || len(got.Shares) != 0 || !r.Exists("desk") || !r.Online("desk") {
		t.Fatalf("unshare everyone of a registered Space: %+v, exists %v", got, r.Exists("desk"))
	}
	if res := call(t, cs, "relay_unregister_space", map[string]any{"space": "front"}); res.IsError || r.Exists("desk") {
		t.Fatalf("unregister desk: %s", text(res))
	}
	if got = share(map[string]any{"space": "front", "who": "bob"}); got.Machine != "front" {
		t.Fatalf("share attaches again: %+v", got)
	}
	if res := call(t, cs, "relay_register_space", map[string]any{"space": "front"}); res.IsError {
		t.Fatalf("register a shared Space: %s", text(res))
	}
	structured(t, call(t, cs, "unshare_space", map[string]any{"space": "front"}), &got)
	if got.Machine != "front" || !r.Exists("front") || !r.Online("front") {
		t.Fatalf("unshare everyone of a Space registered after its share: %+v, exists %v", got, r.Exists("front"))
	}

	// A relay:<computer> is shared directly, and stays when unshared.
	r.Attach("alice", "box", e.daemon.URL, e.daemon.Token)
	got = share(map[string]any{"space": "relay:box", "who": "bob", "role": "editor"})
	if got.Space != "relay:box" || got.Machine != "box" || len(got.Shares) != 1 {
		t.Fatalf("share relay:box: %+v", got)
	}
	structured(t, call(t, cs, "unshare_space", map[string]any{"space": "relay:box"}), &got)
	if got.Machine != "box" || len(got.Shares) != 0 || !r.Exists("box") {
		t.Fatalf("unshare relay:box: %+v", got)
	}
	// Another user's computer is not found, as one that does not exist.
	r.Attach("carol", "carols", e.daemon.URL, e.daemon.Token)
	if k := errKind(t, call(t, cs, "share_space", map[string]any{"space": "relay:carols", "who": "bob"})); k != "not_found" {
		t.Errorf("another user's computer: kind %s", k)
	}
}

func sameShared(a, b relayreg.Shared) bool {
	return a.Space == b.Space && a.Machine == b.Machine && a.InviteeSpace == b.InviteeSpace && a.URL == b.URL &&
		a.Online == b.Online && slices.Equal(a.Shares, b.Shares)
}
