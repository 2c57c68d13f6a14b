package relayd_test

import (
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
)

// A revocation whose Kick was lost (here: the share taken out of the
// store directly, so no route cuts anyone) still ends the person's
// streams at the next re-check.
func TestRecheckCatchesALostRevocation(t *testing.T) {
	const every = 100 * time.Millisecond
	cases := []struct {
		name string
		role protocol.Role
		// lose changes the store behind the relay's back.
		lose func(t *testing.T, f *shareFixture)
	}{
		{"share gone", protocol.RoleViewer, func(t *testing.T, f *shareFixture) {
			if _, err := f.r.Store.DeleteShares(t.Context(), "pc", meID(t, f.r, f.bob)); err != nil {
				t.Fatal(err)
			}
		}},
		{"editor made viewer", protocol.RoleEditor, func(t *testing.T, f *shareFixture) {
			if _, err := f.r.Store.PutShare(t.Context(), "pc", meID(t, f.r, f.bob), protocol.RoleViewer); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newShareFixtureLimits(t, relayd.Limits{Recheck: every})
			r := f.r
			st, b, _ := r.do(http.MethodPut, sharesPath("pc"), f.ann, relayapi.ShareRequest{Who: "bob", Role: c.role})
			decodeShares(t, st, b)
			ws := dialWS(t, r, f.bob, "/c/pc/ws")
			annWS := dialWS(t, r, f.ann, "/c/pc/ws")
			// Live and unchanged: several rounds pass with no Kick.
			select {
			case k := <-f.sp.kicks:
				t.Fatalf("kick before any change: %+v", k.Kick)
			case <-time.After(3 * every):
			}
			start := time.Now()
			c.lose(t, f)
			select {
			case k := <-f.sp.kicks:
				if k.Person != meID(t, r, f.bob) || k.Reason != protocol.CloseKicked {
					t.Fatalf("kick: %+v", k.Kick)
				}
				t.Logf("store change to Kick: %s (re-check every %s)", k.at.Sub(start), every)
			case <-time.After(10 * every):
				t.Fatalf("no Kick within %s of the lost revocation", 10*every)
			}
			_ = ws.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, _, err := ws.ReadMessage(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("bob's stream open after the re-check: %v", err)
			}
			// The owner's stream is no share's: it stays.
			_ = annWS.SetReadDeadline(time.Now().Add(3 * every))
			var ne net.Error
			if _, _, err := annWS.ReadMessage(); !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("ann's stream ended: %v", err)
			}
		})
	}
}
