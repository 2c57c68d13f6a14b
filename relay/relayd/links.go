package relayd

import (
	"math"
	"net/http"
	pathpkg "path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Viewer links through the relay: /c/<computer>/ serves the viewer page
// itself (its own copy, media/viewer) and forwards a few stream routes with
// no relay token, for the holder of a media link (the page, or a WHEP
// client with a stream ticket). The relay checks no ticket; the Space does,
// as on its own port. The relay only keeps what an anonymous caller may
// reach small, and bounds how hard it may knock.
const (
	// DefaultLinkRate and DefaultLinkBurst are the token bucket of the
	// link forwards of one computer: requests per second, and at most at
	// once. A viewer takes an ICE query and an offer per (re)connection;
	// its page's files are the relay's own and take nothing.
	DefaultLinkRate  = 20
	DefaultLinkBurst = 40
	// DefaultMaxLinkStreams caps the relayed streams of link forwards open
	// at once on one session, within MaxStreams: a link holder cannot take
	// the owner's streams.
	DefaultMaxLinkStreams = 64
	// maxICEBody bounds the Space's answer to GET /v1/stream/ice that the
	// relay reads to add its TURN server.
	maxICEBody = 64 << 10
)

// linkRoute is what a request under /c/<computer>/ is, for the link rules.
type linkRoute int

const (
	notLink     linkRoute = iota
	linkViewer            // GET, HEAD api.PathViewer...: the page's static files, public, the relay's own
	linkICE               // GET api.PathStreamICE (ticket)
	linkOffer             // POST api.PathStreamScreen or PathStreamWindow: a WHEP offer (ticket)
	linkSession           // DELETE api.PathStreamSession: the end of a WHEP session (ticket)
)

// The {id} routes, as prefixes of one more path segment.
var (
	windowPrefix  = strings.TrimSuffix(api.PathStreamWindow, "{id}")
	sessionPrefix = strings.TrimSuffix(api.PathStreamSession, "{id}")
)

// classifyLink tells which link route a request is: method and the daemon
// path, unescaped (as splitComputerPath answers it). A path that is not
// clean (dot segments, doubled slashes: they could reach another route
// once the Space's mux cleans them) is no link route.
func classifyLink(method, path string) linkRoute {
	if !cleanPath(path) {
		return notLink
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		if strings.HasPrefix(path, api.PathViewer) {
			return linkViewer
		}
		if method == http.MethodGet && path == api.PathStreamICE {
			return linkICE
		}
	case http.MethodPost:
		if path == api.PathStreamScreen || oneSegmentAfter(path, windowPrefix) {
			return linkOffer
		}
	case http.MethodDelete:
		if oneSegmentAfter(path, sessionPrefix) {
			return linkSession
		}
	}
	return notLink
}

// cleanPath reports whether p is absolute and path.Clean leaves it as it is
// (but for a trailing slash).
func cleanPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	trimmed := p
	if len(p) > 1 {
		trimmed = strings.TrimSuffix(p, "/")
	}
	return pathpkg.Clean(p) == trimmed
}

// oneSegmentAfter reports whether path is prefix and one non-empty segment.
func oneSegmentAfter(path, prefix string) bool {
	id, ok := strings.CutPrefix(path, prefix)
	return ok && id != "" && !strings.Contains(id, "/")
}

// handleComputer is /c/<computer>/...: the viewer's files are the relay's
// own, whoever asks (serveViewer); otherwise a media ticket reaches the
// stream routes of a viewer link (handleLink), and a user token is the
// owner's way (handleProxy, every route).
func (s *Server) handleComputer(w http.ResponseWriter, r *http.Request) {
	if path, ok := viewerFile(r); ok {
		s.serveViewer(w, r, path)
		return
	}
	if strings.HasPrefix(bearer(r), api.TicketPrefix) {
		s.handleLink(w, r)
		return
	}
	s.user(s.handleProxy)(w, r)
}

// viewerFile answers the daemon path of a request for the viewer's files:
// GET or HEAD under api.PathViewer, a clean path (classifyLink).
func viewerFile(r *http.Request) (string, bool) {
	_, path, _, err := splitComputerPath(r.URL.EscapedPath())
	return path, err == nil && classifyLink(r.Method, path) == linkViewer
}

// serveViewer answers a request for the viewer page's files from the
// relay's own copy, at the daemon path, whatever the computer and whatever
// Authorization the request carries: nothing reaches a Space. Every
// computer's page shares the relay's origin, so no Space may serve script
// or headers there (it could read another computer's tickets from storage,
// or register a service worker over the whole origin that rewrites every
// viewer page). The page is the same for any computer name, online,
// offline or none, so it tells an anonymous caller nothing. It takes no
// link rate: static bytes from memory cost the relay nothing worth
// limiting, and its handler sets the page's security headers (CSP).
func (s *Server) serveViewer(w http.ResponseWriter, r *http.Request, path string) {
	u := *r.URL
	u.Path, u.RawPath = path, ""
	r2 := *r
	r2.URL = &u
	s.viewer.ServeHTTP(w, &r2)
}

// handleLink forwards a link holder's request (its Authorization is a
// media ticket, kept for the Space to check) with a grant of role link,
// within the computer's link rate and streams.
func (s *Server) handleLink(w http.ResponseWriter, r *http.Request) {
	name, path, rawPath, err := splitComputerPath(r.URL.EscapedPath())
	if err != nil {
		writeError(w, err)
		return
	}
	route := classifyLink(r.Method, path)
	if route == notLink {
		// Refused before any lookup: the answer is the same whether the
		// computer exists or not, and nothing reaches a Space. 401, as
		// the same request without the ticket: a ticket is no
		// credential of the relay's, and the route exists for a token.
		writeError(w, api.Errorf(api.KindUnauthenticated, "%s %s: a media ticket opens only a viewer link's stream routes through the relay", r.Method, path).
			WithHint("GET "+api.PathStreamICE+", POST "+api.PathStreamScreen+" or "+api.PathStreamWindow+", DELETE "+api.PathStreamSession+"; other routes take a relay user token (Authorization: Bearer cuau_...)"))
		return
	}
	link := caller{id: protocol.LinkPerson, name: protocol.LinkPerson, role: protocol.RoleLink}
	ss := s.session(name)
	if ss == nil {
		// Attached to another node: its home node takes from the link
		// rate and streams, on each request's own stream (nodes.go).
		if rem := s.remoteFor(r.Context(), name); rem != nil {
			s.metrics.LinkForwards.Add(1)
			s.forward(w, r, forwarding{rem: rem, name: name, path: path, rawPath: rawPath, route: route, keepAuth: true, caller: link})
			return
		}
		// An offline computer and none look alike to a link holder: a
		// link names a computer, it does not prove one is anyone's.
		writeError(w, api.Errorf(api.KindRelay, "computer %q is not reachable through the relay: it is offline, or there is no such computer", name).
			WithHint("retry in a while: a Space that restarts attaches again by itself"))
		return
	}
	if ok, wait := ss.links.take(s.clock.Now(), float64(s.cfg.Limits.LinkRate), s.cfg.Limits.LinkBurst); !ok {
		s.metrics.LinkRateLimited.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(wait, time.Second).Seconds()))))
		writeJSON(w, http.StatusTooManyRequests, api.ErrorEnvelope{Error: api.Errorf(api.KindLimitExceeded,
			"computer %q: more than %d link requests a second through the relay", name, s.cfg.Limits.LinkRate).
			WithReason(relayapi.ReasonRateLimited).WithHint("retry after the Retry-After seconds")})
		return
	}
	s.metrics.LinkForwards.Add(1)
	s.forward(w, r, forwarding{ss: ss, name: name, path: path, rawPath: rawPath, route: route, keepAuth: true, caller: link})
}

// tokenBucket is one computer's link rate: a bucket of burst requests,
// refilled at rate a second.
type tokenBucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// take takes one request from the bucket at now, or answers how long until
// one is there.
func (b *tokenBucket) take(now time.Time, rate float64, burst int) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens, b.last = float64(burst), now
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(burst), b.tokens+d.Seconds()*rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}
