package relayd_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// peopleLines are the attach and detach lines of shared people (the
// Space's own attach lines name its node) on pc, oldest first.
func peopleLines(t *testing.T, f *shareFixture) []string {
	t.Helper()
	st, b, _ := f.r.do(http.MethodGet, sharesPath("pc")+"?audit=1", f.ann, nil)
	var out []string
	for _, l := range decodeShares(t, st, b).Audit {
		if (l.Action == relayapi.AuditAttach || l.Action == relayapi.AuditDetach) && !strings.HasPrefix(l.Detail, "node ") {
			out = append(out, l.Action+" "+l.Detail)
		}
	}
	return out
}

// A shared person's first stream writes one attach line (an editor's says
// it is a human input session), their last one detach line with why; the
// owner's streams write none, and many streams still write one pair.
func TestAuditOfSharedPeople(t *testing.T) {
	f := newShareFixture(t)
	r := f.r
	for _, sh := range []relayapi.ShareRequest{{Who: "bob", Role: protocol.RoleEditor}, {Who: "cat", Role: protocol.RoleViewer}} {
		st, b, _ := r.do(http.MethodPut, sharesPath("pc"), f.ann, sh)
		decodeShares(t, st, b)
	}
	// ann, the owner: nothing.
	dialWS(t, r, f.ann, "/c/pc/ws").Close()
	// bob: a request (its pooled stream stays open), then two WebSockets
	// at once, closed: one attach, no detach while the pooled one lives.
	if st, b, _ := r.do(http.MethodGet, "/c/pc/v1/x", f.bob, nil); st != http.StatusOK {
		t.Fatalf("bob: %d %s", st, b)
	}
	w1, w2 := dialWS(t, r, f.bob, "/c/pc/ws"), dialWS(t, r, f.bob, "/c/pc/ws")
	w1.Close()
	w2.Close()
	// cat: one WebSocket, closed: attach then detach.
	dialWS(t, r, f.cat, "/c/pc/ws").Close()
	want := []string{
		"attach bob as editor: a human input session",
		"attach cat as viewer: viewing",
		"detach cat as viewer: their last stream closed",
	}
	var got []string
	eventually(t, "cat's detach line", func() bool {
		got = peopleLines(t, f)
		return len(got) >= len(want)
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Unshare bob: his pooled stream is cut, and the detach says why.
	st, b, _ := r.do(http.MethodDelete, sharesPath("pc")+"?who=bob", f.ann, nil)
	decodeShares(t, st, b)
	want = append(want, "detach bob as editor: kicked: the share ended")
	eventually(t, "bob's detach line", func() bool {
		got = peopleLines(t, f)
		return len(got) >= len(want)
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
