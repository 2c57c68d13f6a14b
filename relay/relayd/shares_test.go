package relayd_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
)

// team adds a team with these users through the admin socket.
func (r *testRelay) team(name string, users ...string) {
	r.t.Helper()
	c := relayd.NewAdminClient(r.dataDir)
	if _, err := c.CreateTeam(r.t.Context(), name); err != nil {
		r.t.Fatal(err)
	}
	for _, u := range users {
		if _, err := c.AddTeamMember(r.t.Context(), name, u); err != nil {
			r.t.Fatal(err)
		}
	}
}

func sharesPath(computer string) string {
	return strings.Replace(relayapi.PathComputerShares, "{name}", computer, 1)
}

func decodeShares(t *testing.T, st int, b []byte) relayapi.Shares {
	t.Helper()
	if st != http.StatusOK {
		t.Fatalf("shares: %d %s", st, b)
	}
	var s relayapi.Shares
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTeamsOnTheAdminSocket(t *testing.T) {
	r := startRelay(t, t.TempDir(), relayd.Limits{})
	r.user("ann")
	r.user("bob")
	c := relayd.NewAdminClient(r.dataDir)
	ctx := t.Context()
	if _, err := c.CreateTeam(ctx, "red"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTeam(ctx, "red"); api.AsError(err).Reason != "exists" {
		t.Fatalf("second team red: %v, want reason exists", err)
	}
	if _, err := c.CreateTeam(ctx, "blue"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddTeamMember(ctx, "red", "ann"); err != nil {
		t.Fatal(err)
	}
	tm, err := c.AddTeamMember(ctx, "red", "bob")
	if err != nil || strings.Join(tm.Members, ",") != "ann,bob" {
		t.Fatalf("red: %+v %v", tm, err)
	}
	// At most one team.
	if _, err := c.AddTeamMember(ctx, "blue", "ann"); api.AsError(err).Reason != "in_team" {
		t.Fatalf("ann into blue too: %v, want reason in_team", err)
	}
	if _, err := c.AddTeamMember(ctx, "red", "nobody"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("unknown user: %v", err)
	}
	if _, err := c.AddTeamMember(ctx, "green", "ann"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("unknown team: %v", err)
	}
	if _, err := c.RemoveTeamMember(ctx, "red", "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddTeamMember(ctx, "blue", "ann"); err != nil {
		t.Fatalf("ann into blue after leaving red: %v", err)
	}
	ts, err := c.Teams(ctx)
	if err != nil || len(ts) != 2 || ts[0].ID != "blue" || strings.Join(ts[0].Members, ",") != "ann" || strings.Join(ts[1].Members, ",") != "bob" {
		t.Fatalf("teams: %+v %v", ts, err)
	}
}

// shareFixture: ann owns pc and is in team red with bob and (by email)
// cat; out is in team blue; solo is in no team.
type shareFixture struct {
	r                        *testRelay
	ann, bob, cat, out, solo string
	sp                       *standInSpace
}

func newShareFixture(t *testing.T) *shareFixture {
	return newShareFixtureLimits(t, relayd.Limits{})
}

func newShareFixtureLimits(t *testing.T, limits relayd.Limits) *shareFixture {
	r := startRelay(t, t.TempDir(), limits)
	f := &shareFixture{r: r, ann: r.user("ann"), bob: r.user("bob"), out: r.user("out"), solo: r.user("solo")}
	c := relayd.NewAdminClient(r.dataDir)
	if _, err := c.CreateUser(t.Context(), "cat", "Cat@Example.org"); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.cat, err = c.CreateToken(t.Context(), "cat"); err != nil {
		t.Fatal(err)
	}
	r.team("red", "ann", "bob", "cat")
	r.team("blue", "out")
	ct := r.register(f.ann, "pc")
	f.sp = r.attach(ct.Token, echoHandler())
	return f
}

func TestShareRefusals(t *testing.T) {
	f := newShareFixture(t)
	r := f.r
	soloPC := r.register(f.solo, "solo-pc")
	_ = soloPC
	cases := []struct {
		name, token, computer string
		req                   relayapi.ShareRequest
		kind                  api.Kind
		reason, message       string
	}{
		{"owner in no team", f.solo, "solo-pc", relayapi.ShareRequest{Who: "bob"}, api.KindPermissionDenied, relayapi.ReasonSharingNeedsTeam, relayapi.MessageSharingNeedsTeam},
		{"user outside the team", f.ann, "pc", relayapi.ShareRequest{Who: "out"}, api.KindPermissionDenied, relayapi.ReasonShareOutsideTeam, ""},
		{"user in no team", f.ann, "pc", relayapi.ShareRequest{Who: "solo"}, api.KindPermissionDenied, relayapi.ReasonShareOutsideTeam, ""},
		{"another team", f.ann, "pc", relayapi.ShareRequest{Who: "team:blue"}, api.KindPermissionDenied, relayapi.ReasonShareOutsideTeam, ""},
		{"unknown user", f.ann, "pc", relayapi.ShareRequest{Who: "zed"}, api.KindNotFound, "", ""},
		{"unknown email", f.ann, "pc", relayapi.ShareRequest{Who: "zed@example.org"}, api.KindNotFound, "", ""},
		{"unknown team", f.ann, "pc", relayapi.ShareRequest{Who: "team:green"}, api.KindNotFound, "", ""},
		{"bad role", f.ann, "pc", relayapi.ShareRequest{Who: "bob", Role: "owner"}, api.KindInvalidArgument, "", ""},
		{"empty who", f.ann, "pc", relayapi.ShareRequest{Who: " "}, api.KindInvalidArgument, "", ""},
		{"the owner", f.ann, "pc", relayapi.ShareRequest{Who: "ann"}, api.KindInvalidArgument, "", ""},
		{"not the owner", f.bob, "pc", relayapi.ShareRequest{Who: "cat"}, api.KindNotFound, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b, _ := r.do(http.MethodPut, sharesPath(c.computer), c.token, c.req)
			e := errorOf(t, b)
			if e.Kind != c.kind || e.Reason != c.reason || (c.message != "" && e.Message != c.message) {
				t.Fatalf("%d %+v, want kind %s reason %q message %q", st, e, c.kind, c.reason, c.message)
			}
		})
	}
	// A non-owner reads and ends no shares either: 404 as for no computer.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if st, b, _ := r.do(m, sharesPath("pc"), f.bob, nil); st != http.StatusNotFound {
			t.Fatalf("%s by bob: %d %s", m, st, b)
		}
	}
}

func TestShareReachUnshare(t *testing.T) {
	f := newShareFixture(t)
	r := f.r
	// Not shared yet: bob's request is refused as for no computer.
	if st, b, _ := r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil); st != http.StatusNotFound {
		t.Fatalf("bob before any share: %d %s", st, b)
	}
	st, b, _ := r.do(http.MethodPut, sharesPath("pc"), f.ann, relayapi.ShareRequest{Who: "bob"})
	s := decodeShares(t, st, b)
	if !s.Online || s.URL != "https://"+r.addr+"/c/pc/" || len(s.Shares) != 1 || s.Shares[0] != (relayapi.Share{Who: "bob", Role: protocol.RoleViewer}) {
		t.Fatalf("after share: %+v", s)
	}
	// By email, case-insensitively, and as an editor.
	st, b, _ = r.do(http.MethodPut, sharesPath("pc"), f.ann, relayapi.ShareRequest{Who: "cat@example.org", Role: protocol.RoleEditor})
	s = decodeShares(t, st, b)
	if len(s.Shares) != 2 || s.Shares[1].Who != "cat" || s.Shares[1].Role != protocol.RoleEditor {
		t.Fatalf("after share with cat: %+v", s)
	}

	// bob reaches pc as a viewer, with his person id in the grant.
	st, b, _ = r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil)
	if st != http.StatusOK {
		t.Fatalf("bob as viewer: %d %s", st, b)
	}
	if a := decodeEcho(t, b); a.Role != string(protocol.RoleViewer) || a.PersonName != "bob" || a.Person == "" {
		t.Fatalf("bob's grant: %+v", a)
	}
	st, b, _ = r.do(http.MethodGet, "/c/pc/v1/x", f.ann, nil)
	if a := decodeEcho(t, b); st != http.StatusOK || a.Role != string(protocol.RoleOwner) {
		t.Fatalf("ann's grant: %d %+v", st, a)
	}
	// The list shows pc to bob, with his role; to ann as its owner.
	var l relayapi.ComputerList
	_, b, _ = r.do(http.MethodGet, relayapi.PathComputers, f.bob, nil)
	if json.Unmarshal(b, &l) != nil || len(l.Computers) != 1 || l.Computers[0].Name != "pc" || l.Computers[0].Role != protocol.RoleViewer || l.Computers[0].Owner != "ann" {
		t.Fatalf("bob's computers: %s", b)
	}
	_, b, _ = r.do(http.MethodGet, relayapi.PathComputers, f.ann, nil)
	if json.Unmarshal(b, &l) != nil || len(l.Computers) != 1 || l.Computers[0].Role != protocol.RoleOwner {
		t.Fatalf("ann's computers: %s", b)
	}
	if _, b, _ = r.do(http.MethodGet, relayapi.PathComputers, f.out, nil); !bytes.Contains(b, []byte(`"computers":[]`)) {
		t.Fatalf("out's computers: %s", b)
	}

	// Shared again as editor: the next request carries the new role.
	st, b, _ = r.do(http.MethodPut, sharesPath("pc"), f.ann, relayapi.ShareRequest{Who: "bob", Role: protocol.RoleEditor})
	decodeShares(t, st, b)
	st, b, _ = r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil)
	if a := decodeEcho(t, b); st != http.StatusOK || a.Role != string(protocol.RoleEditor) {
		t.Fatalf("bob as editor: %d %+v", st, a)
	}

	// A live stream of bob's (a WebSocket through the relay) is connected.
	ws := dialWS(t, r, f.bob, "/c/pc/ws")
	st, b, _ = r.do(http.MethodGet, sharesPath("pc"), f.ann, nil)
	s = decodeShares(t, st, b)
	if !s.Shares[0].Connected || s.Shares[1].Connected {
		t.Fatalf("connected: %+v", s.Shares)
	}

	// Unshare: the Space hears Kick for bob, his live stream ends, and
	// his next request is refused.
	start := time.Now()
	st, b, _ = r.do(http.MethodDelete, sharesPath("pc")+"?who=bob", f.ann, nil)
	s = decodeShares(t, st, b)
	if len(s.Shares) != 1 || s.Shares[0].Who != "cat" {
		t.Fatalf("after unshare: %+v", s)
	}
	select {
	case k := <-f.sp.kicks:
		bobID := meID(t, r, f.bob)
		if k.Person != bobID || k.Reason != protocol.CloseKicked {
			t.Fatalf("kick: %+v, want bob %s", k.Kick, bobID)
		}
		t.Logf("unshare to Kick at the Space: %s", k.at.Sub(start))
	case <-time.After(500 * time.Millisecond):
		t.Fatal("no Kick within 500 ms of the unshare")
	}
	// Ended by the relay, not by the deadline.
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("bob's live stream still open after the unshare: %v", err)
	}
	if st, b, _ := r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil); st != http.StatusNotFound {
		t.Fatalf("bob after unshare: %d %s", st, b)
	}

	// The whole team: bob reaches pc again, through it.
	st, b, _ = r.do(http.MethodPut, sharesPath("pc"), f.ann, relayapi.ShareRequest{Who: "team:red"})
	decodeShares(t, st, b)
	st, b, _ = r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil)
	if a := decodeEcho(t, b); st != http.StatusOK || a.Role != string(protocol.RoleViewer) {
		t.Fatalf("bob through team red: %d %s", st, b)
	}
	// Every share ends: one KickAll; nobody but ann gets in.
	st, b, _ = r.do(http.MethodDelete, sharesPath("pc"), f.ann, nil)
	decodeShares(t, st, b)
	select {
	case k := <-f.sp.kicks:
		if k.Person != protocol.KickAll {
			t.Fatalf("kick: %+v, want all", k.Kick)
		}
	case <-time.After(500 * time.Millisecond):
		t.Fatal("no KickAll within 500 ms")
	}
	for _, tok := range []string{f.bob, f.cat} {
		if st, _, _ := r.do(http.MethodGet, "/c/pc/v1/x", tok, nil); st != http.StatusNotFound {
			t.Fatalf("after every share ended: %d", st)
		}
	}

	// The audit, in order, as the owner reads it.
	st, b, _ = r.do(http.MethodGet, sharesPath("pc")+"?audit=1", f.ann, nil)
	s = decodeShares(t, st, b)
	var got []string
	for _, l := range s.Audit {
		if l.Space != "pc" || l.TSMS == 0 {
			t.Fatalf("audit line: %+v", l)
		}
		if l.Action == relayapi.AuditShare || l.Action == relayapi.AuditUnshare {
			got = append(got, l.Action+" "+l.Detail)
		}
	}
	want := []string{
		"share bob as viewer by ann",
		"share cat@example.org as editor by ann",
		"share bob as editor by ann (was viewer)",
		"unshare bob by ann",
		"share team:red as viewer by ann",
		"unshare cat by ann",
		"unshare team:red by ann",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func meID(t *testing.T, r *testRelay, tok string) string {
	t.Helper()
	var me relayapi.Me
	_, b, _ := r.do(http.MethodGet, relayapi.PathMe, tok, nil)
	if err := json.Unmarshal(b, &me); err != nil {
		t.Fatal(err)
	}
	return me.User.ID
}

// dialWS opens a WebSocket through the relay with a user token and checks
// that it echoes.
func dialWS(t *testing.T, r *testRelay, tok, path string) *websocket.Conn {
	t.Helper()
	u := url.URL{Scheme: "wss", Host: r.addr, Path: path}
	ws, resp, err := (&websocket.Dialer{TLSClientConfig: r.tlsConfig()}).Dial(u.String(), http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		if resp != nil {
			t.Fatalf("ws %s: %v: %d", path, err, resp.StatusCode)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if err := ws.WriteMessage(1, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := ws.ReadMessage(); err != nil || string(b) != "hi" {
		t.Fatalf("echo: %q %v", b, err)
	}
	return ws
}

// The bridge's calls (relayapi.Client) against the real routes: share,
// list with the audit, unshare one, unshare all.
func TestSharesThroughTheClient(t *testing.T) {
	f := newShareFixture(t)
	r := f.r
	c, err := relayapi.New("https://"+r.addr, f.ann, relayapi.Trust{CAFile: r.ca.WriteCA(t, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx := t.Context()
	s, err := c.Share(ctx, "pc", relayapi.ShareRequest{Who: "bob", Role: protocol.RoleEditor})
	if err != nil || len(s.Shares) != 1 || s.Shares[0].Role != protocol.RoleEditor || !s.Online {
		t.Fatalf("share: %+v %v", s, err)
	}
	if _, err := c.Share(ctx, "pc", relayapi.ShareRequest{Who: "team:red"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Share(ctx, "pc", relayapi.ShareRequest{Who: "out"}); api.AsError(err).Reason != relayapi.ReasonShareOutsideTeam {
		t.Fatalf("share with out: %v", err)
	}
	s, err = c.Shares(ctx, "pc", true)
	if err != nil || len(s.Shares) != 2 || len(s.Audit) == 0 || s.Audit[len(s.Audit)-1].Detail != "team:red as viewer by ann" {
		t.Fatalf("shares with audit: %+v %v", s, err)
	}
	if s, err = c.Shares(ctx, "pc", false); err != nil || s.Audit != nil {
		t.Fatalf("shares without audit: %+v %v", s, err)
	}
	// Unshare one by a who with characters a query must escape.
	if s, err = c.Unshare(ctx, "pc", "team:red"); err != nil || len(s.Shares) != 1 || s.Shares[0].Who != "bob" {
		t.Fatalf("unshare team:red: %+v %v", s, err)
	}
	if s, err = c.Unshare(ctx, "pc", ""); err != nil || len(s.Shares) != 0 {
		t.Fatalf("unshare all: %+v %v", s, err)
	}
	// bob, in team red, reaches pc no more.
	if st, _, _ := r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil); st != http.StatusNotFound {
		t.Fatalf("bob after unshare all: %d", st)
	}
}

// A user taken out of the team loses the team's share at once.
func TestLeavingTheTeamCuts(t *testing.T) {
	f := newShareFixture(t)
	r := f.r
	st, b, _ := r.do(http.MethodPut, sharesPath("pc"), f.ann, relayapi.ShareRequest{Who: "team:red"})
	decodeShares(t, st, b)
	ws := dialWS(t, r, f.bob, "/c/pc/ws")
	if _, err := relayd.NewAdminClient(r.dataDir).RemoveTeamMember(t.Context(), "red", "bob"); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-f.sp.kicks:
		if k.Person != meID(t, r, f.bob) {
			t.Fatalf("kick: %+v", k.Kick)
		}
	case <-time.After(500 * time.Millisecond):
		t.Fatal("no Kick within 500 ms of leaving the team")
	}
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("bob's stream open after leaving the team: %v", err)
	}
	if st, _, _ := r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil); st != http.StatusNotFound {
		t.Fatalf("bob after leaving the team: %d", st)
	}
	if st, _, _ := r.do(http.MethodGet, "/c/pc/v1/x", f.cat, nil); st != http.StatusOK {
		t.Fatalf("cat, still in the team: %d", st)
	}
}

// An editor made a viewer is kicked (their editor sessions end) and their
// next stream carries viewer; a viewer made an editor is not kicked.
func TestRoleChangeOfALiveShare(t *testing.T) {
	f := newShareFixture(t)
	r := f.r
	put := func(role protocol.Role) {
		t.Helper()
		st, b, _ := r.do(http.MethodPut, sharesPath("pc"), f.ann, relayapi.ShareRequest{Who: "bob", Role: role})
		decodeShares(t, st, b)
	}
	put(protocol.RoleViewer)
	put(protocol.RoleEditor)
	select {
	case k := <-f.sp.kicks:
		t.Fatalf("a raised role kicked: %+v", k.Kick)
	case <-time.After(100 * time.Millisecond):
	}
	st, b, _ := r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil)
	if a := decodeEcho(t, b); st != http.StatusOK || a.Role != string(protocol.RoleEditor) {
		t.Fatalf("editor: %d %s", st, b)
	}
	put(protocol.RoleViewer)
	select {
	case k := <-f.sp.kicks:
		if k.Person != meID(t, r, f.bob) {
			t.Fatalf("kick: %+v", k.Kick)
		}
	case <-time.After(500 * time.Millisecond):
		t.Fatal("no Kick within 500 ms of a lowered role")
	}
	st, b, _ = r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil)
	if a := decodeEcho(t, b); st != http.StatusOK || a.Role != string(protocol.RoleViewer) {
		t.Fatalf("viewer again: %d %s", st, b)
	}
}
