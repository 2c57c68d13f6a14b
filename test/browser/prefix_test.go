package browser_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

// prefixFront stands for cua-relay's HTTPS in front of one computer: it
// serves /c/<computer>/... from a daemon with the prefix taken off, the
// Host kept (the page's origin is the front's, as the relay's), and the
// sessions' Location put back under the prefix, as the relay does. It
// records each request. test/relay runs the real relay.
type prefixFront struct {
	url    string
	prefix string

	mu       sync.Mutex
	requests []frontRequest
}

type frontRequest struct {
	method, path, bearer string
}

func startPrefixFront(t *testing.T, daemonURL, computer string) *prefixFront {
	t.Helper()
	target, err := url.Parse(daemonURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &prefixFront{prefix: api.PrefixRelayComputer + computer}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, f.prefix)
			pr.Out.URL.RawPath = ""
		},
		ModifyResponse: func(resp *http.Response) error {
			if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, "/") {
				resp.Header.Set("Location", f.prefix+loc)
			}
			return nil
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		f.requests = append(f.requests, frontRequest{r.Method, r.URL.Path, bearer})
		f.mu.Unlock()
		if !strings.HasPrefix(r.URL.Path, f.prefix+"/") {
			http.NotFound(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// seen answers the requests the front was sent, in order.
func (f *prefixFront) seen() []frontRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]frontRequest(nil), f.requests...)
}

// TestViewerUnderARelayPrefix: a link of a Space reached under a relay
// computer's /c/<computer>/ opens: the page's files load under the
// prefix, it asks <prefix>/v1/stream/ice with its ticket before its offer,
// offers under the prefix with the ticket, decodes the screen, and its
// overlay says the media went direct. A link whose offer names another
// computer is refused by the page, which then sends nothing but its own
// files' requests.
func TestViewerUnderARelayPrefix(t *testing.T) {
	e := start(t, "640x480")
	_, win := e.showWindow(t, 200, 200, quarters)
	f := startPrefixFront(t, e.d.URL, "box")
	c, err := client.New(f.url+f.prefix, e.d.Token)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.StreamEndpoint(t.Context(), api.TicketRequest{}, api.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Route != api.RouteRelay || !strings.HasPrefix(ep.ViewerURL, f.url+f.prefix+api.PathViewer+"#") {
		t.Fatalf("endpoint %+v: want route relay and a link under %s", ep, f.url+f.prefix)
	}
	p := e.b.newPage(t, 800, 600, 1)
	p.connect(ep.ViewerURL)
	p.waitFills("the window's colours in the video", win.Bounds.X, win.Bounds.Y, quarters)

	var ice, offer = -1, -1
	for i, r := range f.seen() {
		if !strings.HasPrefix(r.path, f.prefix+"/") {
			t.Errorf("the page asked %s %s, outside its prefix", r.method, r.path)
		}
		switch r.method + " " + strings.TrimPrefix(r.path, f.prefix) {
		case "GET " + api.PathStreamICE:
			if r.bearer != ep.Ticket {
				t.Errorf("the ICE servers were asked with the bearer %q, want the link's ticket", r.bearer)
			}
			ice = i
		case "POST " + api.PathStreamScreen:
			if r.bearer != ep.Ticket {
				t.Errorf("the offer was sent with the bearer %q, want the link's ticket", r.bearer)
			}
			offer = i
		}
	}
	if ice < 0 || offer < 0 || ice > offer {
		t.Fatalf("requests %+v: want GET %s, then POST %s, under %s", f.seen(), api.PathStreamICE, api.PathStreamScreen, f.prefix)
	}
	// The daemon tells the page the candidate pair ICE chose.
	p.waitFor("the overlay says the media went direct", `document.body.dataset.path === 'direct' &&
		document.getElementById('state').textContent === 'Live · direct'`)
	p.noErrors()

	// The same link with its offer under another computer's prefix.
	before := len(f.seen())
	other := strings.Replace(ep.ViewerURL, url.QueryEscape(f.prefix+"/v1/"), url.QueryEscape(api.PrefixRelayComputer+"other/v1/"), 1)
	if other == ep.ViewerURL {
		t.Fatalf("no offer under %s in %s", f.prefix, ep.ViewerURL)
	}
	q := e.b.newPage(t, 800, 600, 1)
	q.open(other)
	q.waitFor("the viewer refused the link", `document.body.dataset.state === 'failed' && document.getElementById('notice').dataset.reason === 'link'`)
	for _, r := range f.seen()[before:] {
		if !strings.HasPrefix(r.path, f.prefix+api.PathViewer) || r.bearer != "" {
			t.Errorf("the page of a refused link asked %s %s (bearer %t)", r.method, r.path, r.bearer != "")
		}
	}
	q.noErrors()
}
