package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestPresenceOfTwoPeople: alice registers her Space on a real relay and
// shares it with bob, her teammate, as a viewer; each opens the link
// their own `cua-bridge view relay:box` prints (tickets minted through
// the relay, so each names its person) in a headless page of its own
// size. alice's pointer over her picture shows on bob's page as a cursor
// labelled alice, where her stream pixel is on his (smaller, letterboxed)
// picture; bob's, view only and without input channels, shows on hers
// the same way; and each page lists both, itself marked.
func TestPresenceOfTwoPeople(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	state := t.TempDir()
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display, Files: filesvc.Options{StateDir: state}, Relay: relaysvc.Options{StateDir: state}})
	if caps, err := d.Client.Capabilities(t.Context()); err != nil {
		t.Fatal(err)
	} else if ok, lim := caps.Supports(api.FeatureDesktopStream); !ok {
		t.Fatalf("desktop_stream unsupported: %s", lim)
	}

	rl := startTestRelay(t)
	bobHome, _ := rl.user(t, "bob")
	ctx := t.Context()
	if _, err := rl.relay.Store.CreateTeam(ctx, "crew"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := rl.relay.Store.AddTeamMember(ctx, "crew", u); err != nil {
			t.Fatal(err)
		}
	}
	rl.bridge(t, "space", "add", "dev", d.URL, "--token", d.Token)
	rl.bridge(t, "relay", "register", "dev", "--name", "box")
	rl.bridge(t, "share", "dev", "bob")
	aliceLink := rl.bridge(t, "view", "relay:box")
	bobLink := bridgeIn(t, bobHome, "view", "relay:box")
	for _, l := range []string{aliceLink, bobLink} {
		if !strings.HasPrefix(l, "https://"+rl.addr+"/c/box/viewer/#") {
			t.Fatalf("link %q", l)
		}
	}

	b := startBrowserWith(t, rl.chromiumFlag)
	// alice's picture is 800x600 in 900x600 (1.25 page pixels a stream
	// pixel, 50 in), bob's 480x360 in 640x360 (0.75, 80 in).
	alice := b.newPage(t, 900, 600, 1)
	alice.connect(aliceLink)
	bob := b.newPage(t, 640, 360, 1)
	bob.connect(bobLink)
	if labels := value[[]string](bob, `window.__test.labels`); strings.Join(labels, ",") != api.ChannelControl {
		t.Fatalf("bob's page opened %v: a viewer's page opens the control channel alone", labels)
	}
	if !value[bool](bob, `!document.getElementById('mode').hidden`) {
		t.Error("bob's page does not say view only")
	}

	for _, p := range []struct {
		name string
		pg   *page
	}{{"alice", alice}, {"bob", bob}} {
		p.pg.waitFor(p.name+"'s page lists alice and bob, itself marked", fmt.Sprintf(`(() => {
			const li = [...document.querySelectorAll('#who li')];
			const names = li.map((l) => l.dataset.name).sort().join(',');
			const you = li.filter((l) => l.dataset.you === 'true').map((l) => l.dataset.name).join(',');
			return !document.getElementById('who').hidden && names === 'alice,bob' && you === %q;
		})()`, p.name))
	}

	// One's pointer on the other's page: the cursor named for them, its
	// corner where the stream pixel's is on that page (within a few
	// pixels).
	seen := func(mover, watcher *page, name string, sx, sy int) {
		t.Helper()
		x, y := pagePoint(mover.width, mover.height, 640, 480, sx, sy)
		mover.mouse(input.DispatchMouseEventTypeMouseMoved, x-3, y-3, "none", 0)
		mover.mouse(input.DispatchMouseEventTypeMouseMoved, x, y, "none", 0)
		cx, cy := pagePoint(watcher.width, watcher.height, 640, 480, sx, sy)
		scale := min(float64(watcher.width)/640, float64(watcher.height)/480)
		cx, cy = cx-scale/2, cy-scale/2 // the pixel's corner, not its centre
		watcher.waitFor(fmt.Sprintf("%s's cursor at (%.1f, %.1f) on the other page", name, cx, cy), fmt.Sprintf(`(() => {
			const els = [...document.querySelectorAll('.peer-cursor')].filter((e) => !e.hidden);
			if (els.length !== 1 || els[0].dataset.name !== %q || els[0].textContent !== %q) {
				return false;
			}
			const r = els[0].getBoundingClientRect();
			return Math.abs(r.left - %f) <= 3 && Math.abs(r.top - %f) <= 3;
		})()`, name, name, cx, cy))
	}
	noPeers := `[...document.querySelectorAll('.peer-cursor')].every((e) => e.hidden)`
	if !value[bool](alice, noPeers) {
		t.Error("alice's page draws a peer cursor before bob's pointer came")
	}
	seen(alice, bob, "alice", 320, 240)
	// alice's pointer leaves her picture (into its letterbox): bob's page
	// hides her cursor.
	alice.mouse(input.DispatchMouseEventTypeMouseMoved, 10, 300, "none", 0)
	bob.waitFor("alice's cursor hidden once her pointer left her picture", noPeers)
	seen(bob, alice, "bob", 100, 60)

	alice.noErrors()
	bob.noErrors()
}
