package cli_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/relaytest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// TestViewRelaySpace: view relay:<computer> prints a link under the
// relay's /c/<computer>/ (the page, and the offer in its fragment), which
// carries the stream's ticket and never the user's relay token, and says
// the route goes through the relay; the ticket is the Space's own (its
// offer is taken at the Space). The stand-in relay (bridge/relaytest)
// forwards only the user's token; test/relay opens such a link through
// the real relay.
func TestViewRelaySpace(t *testing.T) {
	s := streamingSpace(t)
	r := relaytest.Start(t)
	tok := r.AddUser(t, "alice")
	tokFile := filepath.Join(t.TempDir(), "relay.token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := run(t.Context(), s.home, "", "relay", "login", "--url", r.URL, "--token-file", tokFile, "--fingerprint", r.Fingerprint); res.code != 0 {
		t.Fatalf("relay login: %+v", res)
	}
	r.Attach("alice", "box", s.d.URL, s.d.Token)

	base := relayapi.ComputerURL(r.URL, "box")
	if !api.IsRelayComputerURL(base) || !strings.HasSuffix(base, api.PrefixRelayComputer+"box") {
		t.Fatalf("the relay's computer URL %q is not what api.IsRelayComputerURL takes: api.PrefixRelayComputer and relayapi.PrefixComputer differ", base)
	}
	res := run(t.Context(), s.home, "", "view", "relay:box", "--view-only", "--max-width", "320")
	if res.code != 0 || !strings.Contains(res.stderr, "320x240") || !strings.Contains(res.stderr, "route: through the relay") {
		t.Fatalf("view relay:box: %+v", res)
	}
	link := strings.TrimSpace(res.stdout)
	if strings.Contains(link, tok) || strings.Contains(res.stderr, tok) || strings.Contains(link, s.d.Token) {
		t.Fatalf("view relay:box printed a token: %+v", res)
	}
	page, fragment, ok := strings.Cut(link, "#")
	q, err := url.ParseQuery(fragment)
	if !ok || err != nil || page != base+api.PathViewer || len(q) != 2 {
		t.Fatalf("link %q: want %s%s#ticket=...&offer=...", link, base, api.PathViewer)
	}
	if want := base + api.PathStreamScreen + "?max_width=320"; q.Get("offer") != want || !strings.HasPrefix(q.Get("ticket"), "cuat1.") {
		t.Fatalf("link %q: offer %q (want %q), ticket %q", link, q.Get("offer"), want, q.Get("ticket"))
	}
	if n := r.Requests("POST " + api.PrefixRelayComputer + "box" + api.PathStreamTickets); n != 1 {
		t.Errorf("the relay forwarded %d ticket requests of box, want 1", n)
	}
	rc := rtctest.New(t, rtctest.Options{})
	offer, err := rtctest.Post(t.Context(), s.d.URL+api.PathStreamScreen+"?max_width=320", q.Get("ticket"), rc.Offer)
	if err != nil || offer.Status != http.StatusCreated {
		t.Fatalf("the printed ticket's offer at the Space: %+v, %v", offer, err)
	}

	// A local Space's link says its route is direct.
	if res := run(t.Context(), s.home, "", "view", "dev"); res.code != 0 || !strings.Contains(res.stderr, "route: direct") {
		t.Fatalf("view dev: %+v", res)
	}
}
