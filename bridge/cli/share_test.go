package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/relaytest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// share, unshare and shares as a person runs them, against the stand-in
// relay (bridge/relaytest; the real relay's sharing is tested in
// test/relay) and a real daemon behind its SpaceFront; the invitee's
// space ls shows the shared computer with its role.
func TestShareCommands(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	r := relaytest.Start(t)
	ctx := t.Context()
	login := func(home, user string) {
		t.Helper()
		tokFile := filepath.Join(t.TempDir(), "relay.token")
		if err := os.WriteFile(tokFile, []byte(r.AddUser(t, user)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if res := run(ctx, home, "", "relay", "login", "--url", r.URL, "--token-file", tokFile, "--fingerprint", r.Fingerprint); res.code != 0 {
			t.Fatalf("login %s: %+v", user, res)
		}
	}
	if res := run(ctx, s.home, "", "share", "dev"); res.code != 2 {
		t.Fatalf("share without who: %+v", res)
	}
	if res := run(ctx, s.home, "", "share", "dev", "bob", "--role", "owner"); res.code != 2 || !strings.Contains(res.stderr, "viewer or editor") {
		t.Fatalf("share as owner: %+v", res)
	}
	login(s.home, "alice")
	f := r.Front(t, s.d.URL, s.d.Token)
	if res := run(ctx, s.home, "", "space", "add", "front", f.URL, "--token", s.d.Token); res.code != 0 {
		t.Fatalf("space add front: %+v", res)
	}

	// The seed's refusal, with its reason and text.
	res := run(ctx, s.home, "", "share", "front", "bob")
	if res.code != 1 || !strings.Contains(res.stderr, "permission_denied (sharing_needs_team)") || !strings.Contains(res.stderr, "Sharing is for teams. Start a team to share this Space.") {
		t.Fatalf("share with no team: %+v", res)
	}
	r.SetTeam("t1", "alice", "bob")
	if res := run(ctx, s.home, "", "share", "front", "mallory"); res.code != 1 || !strings.Contains(res.stderr, "share_outside_team") {
		t.Fatalf("share outside the team: %+v", res)
	}

	res = run(ctx, s.home, "", "share", "front", "bob", "--json")
	var got struct {
		Space, Machine string
		Invitee        string `json:"invitee_space"`
		Online         bool
		Shares         []struct{ Who, Role string }
		Audit          []struct{ Action, Detail string }
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil || res.code != 0 {
		t.Fatalf("share --json: %+v", res)
	}
	if got.Machine != "front" || got.Invitee != "relay:front" || !got.Online || len(got.Shares) != 1 || got.Shares[0].Role != "viewer" {
		t.Fatalf("share answered %+v", got)
	}
	if res := run(ctx, s.home, "", "share", "front", "bob", "--role", "editor"); res.code != 0 || !strings.Contains(res.stdout, "relay:front") || !strings.Contains(res.stdout, "bob: editor") {
		t.Fatalf("share as editor: %+v", res)
	}

	// bob's own bridge lists it with his role.
	bobHome := t.TempDir()
	login(bobHome, "bob")
	if res := run(ctx, bobHome, "", "space", "ls"); res.code != 0 || !strings.Contains(res.stdout, "relay:front (shared, editor)") {
		t.Fatalf("the invitee's space ls: %+v", res)
	}
	if res := run(ctx, bobHome, "", "exec", "relay:front", "--", "echo", "hi"); res.code != 0 || res.stdout != "hi\n" {
		t.Fatalf("the invitee's exec: %+v", res)
	}

	if res := run(ctx, s.home, "", "unshare", "front", "bob"); res.code != 0 || !strings.Contains(res.stdout, "shared with no one") {
		t.Fatalf("unshare bob: %+v", res)
	}
	res = run(ctx, s.home, "", "shares", "front", "--audit")
	if res.code != 0 || strings.Count(res.stdout, "share ") < 2 || !strings.Contains(res.stdout, "unshare") || !strings.Contains(res.stdout, "bob as editor") {
		t.Fatalf("shares --audit: %+v", res)
	}
	// Everyone: the Space attached for sharing leaves the relay.
	if res := run(ctx, s.home, "", "unshare", "front"); res.code != 0 || !strings.Contains(res.stdout, "not shared") || r.Exists("front") {
		t.Fatalf("unshare everyone: %+v, exists %v", res, r.Exists("front"))
	}
	if res := run(ctx, s.home, "", "shares", "front", "--json"); res.code != 0 || !strings.Contains(res.stdout, `"machine": ""`) {
		t.Fatalf("shares of a Space off the relay: %+v", res)
	}
}
