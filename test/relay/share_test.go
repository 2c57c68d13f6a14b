package relay_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// toolError is the error envelope of a tool call that failed (nil when it
// did not fail).
func (b *bridge) toolError(t testing.TB, name string, args map[string]any) *mcpserve.ErrorDetail {
	t.Helper()
	res := b.callRaw(t, name, args)
	if !res.IsError {
		return nil
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var env mcpserve.ErrorEnvelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s: error envelope %s: %v", name, raw, err)
	}
	return &env.Error
}

// sharesResult is share_space's, unshare_space's and space_shares' answer.
type sharesResult struct {
	Space        string               `json:"space"`
	Machine      string               `json:"machine"`
	InviteeSpace string               `json:"invitee_space"`
	URL          string               `json:"url"`
	Online       bool                 `json:"online"`
	Shares       []relayapi.Share     `json:"shares"`
	Audit        []relayapi.AuditLine `json:"audit"`
}

// TestShareThroughRelay: with three users on one relay (alice owns the
// Space, bob is in her team, carol is not), alice shares her Space with
// bob as a viewer: he sees relay:box in his list, takes a screenshot, and
// every call that acts is refused by the Space; shared again as an editor
// he runs a command; unshared, he reaches nothing. carol is refused with
// share_outside_team, an owner with no team with sharing_needs_team and
// the seed's text, and the audit holds every line in order.
func TestShareThroughRelay(t *testing.T) {
	desktoptest.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	w := newWorld(t)
	ctx := t.Context()
	alice, bob := newBridge(t, w, w.user("alice")), newBridge(t, w, w.user("bob"))
	carolToken := w.user("carol")
	dave := newBridge(t, w, w.user("dave"))
	if _, err := w.relay.Store.CreateTeam(ctx, "crew"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := w.relay.Store.AddTeamMember(ctx, "crew", u); err != nil {
			t.Fatal(err)
		}
	}
	_ = carolToken

	s := startSpace(t, display)
	alice.addSpace(t, "box", s)
	var shared sharesResult
	alice.call(t, "share_space", map[string]any{"space": "box", "who": "bob"}, &shared)
	if shared.InviteeSpace == "" || !strings.HasPrefix(shared.InviteeSpace, "relay:") || len(shared.Shares) != 1 ||
		shared.Shares[0].Who != "bob" || shared.Shares[0].Role != "viewer" {
		t.Fatalf("share_space: %+v, want bob as a viewer and an invitee_space", shared)
	}
	s.waitConnected(t, 0)
	inviteeSpace := shared.InviteeSpace

	t.Run("viewer", func(t *testing.T) {
		out, errOut, code := bob.cli(t, "space", "ls")
		if code != 0 || !strings.Contains(out, inviteeSpace) {
			t.Fatalf("bob's space ls: exit %d, %q %q: want %s", code, out, errOut, inviteeSpace)
		}
		if e := bob.toolError(t, "space_screenshot", map[string]any{"space": inviteeSpace}); e != nil {
			t.Fatalf("a viewer's screenshot: %+v", e)
		}
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"space_bash", map[string]any{"command": "echo no"}},
			{"space_write", map[string]any{"path": "/tmp/viewer-wrote", "content": "no"}},
			{"space_click", map[string]any{"x": 10, "y": 10}},
		} {
			args := map[string]any{"space": inviteeSpace}
			for k, v := range c.args {
				args[k] = v
			}
			e := bob.toolError(t, c.tool, args)
			if e == nil || e.Kind != string(api.KindPermissionDenied) {
				t.Errorf("a viewer's %s: %+v, want permission_denied", c.tool, e)
			}
		}
	})

	t.Run("editor", func(t *testing.T) {
		alice.call(t, "share_space", map[string]any{"space": "box", "who": "bob", "role": "editor"}, &shared)
		if len(shared.Shares) != 1 || shared.Shares[0].Role != "editor" {
			t.Fatalf("shared again as an editor: %+v", shared.Shares)
		}
		if got := bob.bash(t, "echo editor-$((6*7))"); got != "editor-42\n" {
			t.Fatalf("an editor's command printed %q", got)
		}
	})

	t.Run("unshare", func(t *testing.T) {
		alice.call(t, "unshare_space", map[string]any{"space": "box", "who": "bob"}, &shared)
		if len(shared.Shares) != 0 {
			t.Fatalf("after unshare: %+v", shared.Shares)
		}
		if e := bob.toolError(t, "space_bash", map[string]any{"space": inviteeSpace, "command": "echo still"}); e == nil {
			t.Fatal("bob still runs commands after the unshare")
		}
	})

	t.Run("refusals", func(t *testing.T) {
		e := alice.toolError(t, "share_space", map[string]any{"space": "box", "who": "carol"})
		if e == nil || e.Kind != string(api.KindPermissionDenied) || e.Reason != relayapi.ReasonShareOutsideTeam {
			t.Fatalf("sharing with someone outside the team: %+v, want permission_denied share_outside_team", e)
		}
		other := startSpace(t, "")
		dave.addSpace(t, "lonely", other)
		e = dave.toolError(t, "share_space", map[string]any{"space": "lonely", "who": "alice"})
		if e == nil || e.Kind != string(api.KindPermissionDenied) || e.Reason != relayapi.ReasonSharingNeedsTeam ||
			!strings.Contains(e.Message, relayapi.MessageSharingNeedsTeam) {
			t.Fatalf("an owner in no team: %+v, want permission_denied sharing_needs_team with the seed's text", e)
		}
	})

	t.Run("audit", func(t *testing.T) {
		var res sharesResult
		alice.call(t, "space_shares", map[string]any{"space": "box", "audit": true}, &res)
		var actions []string
		for _, l := range res.Audit {
			if l.Action == relayapi.AuditShare || l.Action == relayapi.AuditUnshare {
				actions = append(actions, l.Action)
			}
		}
		if strings.Join(actions, ",") != "share,share,unshare" {
			t.Fatalf("the audit's share lines: %v (all: %+v), want share, share, unshare in order", actions, res.Audit)
		}
	})
}
