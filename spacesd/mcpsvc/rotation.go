package mcpsvc

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// sessionTokens ties each MCP session to the token it was opened with,
// and to the person who opened it, if any (server.Host.Hold): a rotation
// of that token ends the session, as it ends every stream and ticket of
// the old token, and so does a kick of that person (an unshare, a role
// lowered), as it ends everything they hold. Its id then answers 404, and
// a client opens a new session with the new token (a person whose access
// is gone is refused before).
type sessionTokens struct {
	host server.Host
	mcp  *mcpserve.Server

	mu       sync.Mutex
	sessions map[string]tokenTie
}

// tokenTie is a session's tie to its token and person: ctx ends when the
// token is rotated, the person is kicked (or end is called).
type tokenTie struct {
	ctx context.Context
	end context.CancelCauseFunc
}

// serve passes a request to the MCP handler, noting the session an
// initialize opens, and refusing one of a session whose token was rotated
// or person was kicked (before the session's end, which follows a moment
// later, has been seen).
func (t *sessionTokens) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(mcpserve.SessionHeader); id != "" {
		t.mu.Lock()
		tie, ok := t.sessions[id]
		t.mu.Unlock()
		if ok && ended(tie.ctx) {
			t.mcp.EndSession(id)
			http.Error(w, "MCP session ended: the token it was opened with was rotated, or its person's access ended; initialize a new session", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
		return
	}
	caller := server.CallerOf(r.Context())
	h.ServeHTTP(&sessionRecorder{ResponseWriter: w, opened: func(id string) { t.opened(id, caller) }}, r)
}

// ended reports whether a session's tie ended for a reason that ends the
// session: a rotation or a kick (not the session's own end).
func ended(tie context.Context) bool {
	cause := context.Cause(tie)
	return errors.Is(cause, server.ErrTokenRotated) || errors.Is(cause, server.ErrKicked)
}

func (t *sessionTokens) opened(id string, caller server.Caller) {
	t.host.Metrics.Counter(MetricSessionsOpened).Add(1)
	ctx, end := t.host.Hold(context.Background(), caller)
	context.AfterFunc(ctx, func() {
		if ended(ctx) {
			t.mcp.EndSession(id)
		}
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	// Forget the sessions that ended on their own (DELETE, idle): the
	// map holds the open ones and the few ended since the last initialize.
	live := t.mcp.SessionIDs()
	for old, tie := range t.sessions {
		if !live[old] {
			tie.end(nil)
			delete(t.sessions, old)
		}
	}
	t.sessions[id] = tokenTie{ctx, end}
}

// sessionRecorder hears the session id an answer carries.
type sessionRecorder struct {
	http.ResponseWriter
	opened func(id string)
	heard  bool
}

func (s *sessionRecorder) WriteHeader(code int) {
	if !s.heard {
		s.heard = true
		if id := s.Header().Get(mcpserve.SessionHeader); id != "" && code < 300 {
			s.opened(id)
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(b []byte) (int, error) {
	if !s.heard {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Flush sends an SSE answer's events as they come.
func (s *sessionRecorder) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// close releases every session's tie to its token (the daemon's end).
func (t *sessionTokens) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, tie := range t.sessions {
		tie.end(nil)
		delete(t.sessions, id)
	}
}
