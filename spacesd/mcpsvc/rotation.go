package mcpsvc

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// sessionTokens ties each MCP session to the token it was opened with: a
// rotation of that token ends the session, as it ends every stream and
// ticket of the old token. Its id then answers 404, and a client opens a
// new session with the new token.
type sessionTokens struct {
	host server.Host
	mcp  *mcpserve.Server

	mu       sync.Mutex
	sessions map[string]tokenTie
}

// tokenTie is a session's tie to its token: ctx ends when the token is
// rotated (or end is called).
type tokenTie struct {
	ctx context.Context
	end context.CancelCauseFunc
}

// serve passes a request to the MCP handler, noting the session an
// initialize opens, and refusing one of a session whose token was rotated
// (before the session's end, which follows the rotation a moment later,
// has been seen).
func (t *sessionTokens) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(mcpserve.SessionHeader); id != "" {
		t.mu.Lock()
		tie, ok := t.sessions[id]
		t.mu.Unlock()
		if ok && errors.Is(context.Cause(tie.ctx), server.ErrTokenRotated) {
			t.mcp.EndSession(id)
			http.Error(w, "MCP session ended: the token it was opened with was rotated; initialize a new session", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
		return
	}
	gen := server.CallerOf(r.Context()).Generation
	h.ServeHTTP(&sessionRecorder{ResponseWriter: w, opened: func(id string) { t.opened(id, gen) }}, r)
}

func (t *sessionTokens) opened(id string, gen uint64) {
	t.host.Metrics.Counter(MetricSessionsOpened).Add(1)
	ctx, end := t.host.Session(context.Background(), gen)
	context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), server.ErrTokenRotated) {
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
