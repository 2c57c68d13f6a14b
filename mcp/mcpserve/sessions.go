package mcpserve

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// sessionTable admits sessions up to max and, at the cap, makes room by
// ending the session idle longest. Refusing newcomers instead let a client
// that crash-loops (an initialize per start, never a DELETE) shut every
// other client out until its sessions idled out an hour later.
//
// A session is idle while none of its requests runs: one with a call in
// flight, or a standalone GET stream open, is in use and never evicted.
// When every session is in use, the newcomer is refused (503).
type sessionTable struct {
	max int
	// live answers the ids of the sessions open (the SDK's own list).
	live func() map[string]bool
	// end ends a session; its later requests answer 404.
	end func(id string)
	log *slog.Logger

	mu sync.Mutex
	// pending are the initializes admitted whose session is not in use
	// yet: each holds a slot.
	pending int
	// use are the sessions open, by id, from the answer of their
	// initialize on.
	use map[string]*sessionUse
	// evicted are the sessions ended to make room whose end has not been
	// seen yet (a session's end waits for its calls still running): they
	// answer 404 at once.
	evicted map[string]bool
}

// sessionUse is when a session was last used, and how many of its
// requests are running.
type sessionUse struct {
	last    time.Time
	running int
}

func newSessionTable(max int, live func() map[string]bool, end func(string), log *slog.Logger) *sessionTable {
	return &sessionTable{max: max, live: live, end: end, log: log, use: map[string]*sessionUse{}, evicted: map[string]bool{}}
}

// slot is an initialize's place under the cap: the session it opens takes
// it over, or release gives it back.
type slot struct {
	t    *sessionTable
	held bool // under t.mu
}

// reserve holds a slot for an initialize, evicting the session idle
// longest when the cap is reached. ok is false when every session is in
// use.
func (t *sessionTable) reserve() (s *slot, ok bool) {
	t.mu.Lock()
	// Under t.mu, so that a session opened meanwhile is in the list.
	live := t.live()
	// Forget the sessions that ended (DELETE, idle expiry, eviction): the
	// table then holds the open ones.
	for id := range t.use {
		if !live[id] {
			delete(t.use, id)
		}
	}
	for id := range t.evicted {
		if !live[id] {
			delete(t.evicted, id)
		}
	}
	victim, idle := "", time.Duration(0)
	if len(t.use)+t.pending >= t.max {
		var oldest time.Time
		for id, u := range t.use {
			if u.running == 0 && (victim == "" || u.last.Before(oldest)) {
				victim, oldest = id, u.last
			}
		}
		if victim == "" {
			t.mu.Unlock()
			return nil, false
		}
		idle = time.Since(oldest)
		delete(t.use, victim)
		t.evicted[victim] = true
	}
	t.pending++
	t.mu.Unlock()
	if victim != "" {
		// The id is not logged: with the token, it is what reaches the session.
		t.log.Warn("MCP session evicted: the session cap was reached and it was idle longest; its id now answers 404",
			"max", t.max, "idle", idle.Round(time.Millisecond).String())
		// Its end waits for any call of it still running (one whose client
		// left): the newcomer does not wait for that.
		go t.end(victim)
	}
	return &slot{t: t, held: true}, true
}

// open gives the slot to the session id, idle from now.
func (s *slot) open(id string) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if s.held {
		s.held = false
		s.t.pending--
	}
	s.t.use[id] = &sessionUse{last: time.Now()}
}

// release ends the initialize: the slot goes back, or to the session id
// its answer named if no answer was heard (its client left first, say).
// Otherwise such a session, open in the SDK, would count against no cap.
func (s *slot) release(id string) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if !s.held {
		return
	}
	s.held = false
	s.t.pending--
	if id != "" {
		// Gone from the SDK already (a failed initialize)? The next
		// reserve forgets it.
		s.t.use[id] = &sessionUse{last: time.Now()}
	}
}

// begin notes a request of session id running, until done. ok is false
// for a session evicted whose end has not been seen yet.
func (t *sessionTable) begin(id string) (done func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.evicted[id] {
		return nil, false
	}
	u := t.use[id]
	if u == nil {
		// Unknown to the table (an id never opened, or ended): the SDK
		// answers it, and nothing is kept for it.
		return func() {}, true
	}
	u.running++
	u.last = time.Now()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		u.running--
		u.last = time.Now()
	}, true
}

// openRecorder hears the session id an initialize's answer carries, before
// the client can: its next request then finds the session in the table.
type openRecorder struct {
	http.ResponseWriter
	opened func(id string)
	heard  bool
}

func (o *openRecorder) WriteHeader(code int) {
	if !o.heard {
		o.heard = true
		if id := o.Header().Get(SessionHeader); id != "" && code < 300 {
			o.opened(id)
		}
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *openRecorder) Write(b []byte) (int, error) {
	if !o.heard {
		o.WriteHeader(http.StatusOK)
	}
	return o.ResponseWriter.Write(b)
}

// Flush sends an SSE answer's events as they come.
func (o *openRecorder) Flush() { _ = http.NewResponseController(o.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (o *openRecorder) Unwrap() http.ResponseWriter { return o.ResponseWriter }
