package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/mcp/mcpclient"
)

// daemonSessionIdle is how long a Space's MCP session is kept without a
// call before the bridge closes it (DELETE). Shorter than the daemon's own
// idle bound (mcpserve), so that the bridge, not the daemon, ends a quiet
// session; a burst of calls, or an agent's steps a few seconds apart,
// share one.
const daemonSessionIdle = 2 * time.Minute

// daemonSessions keep one MCP session per Space (its URL and token: a new
// token or a Space registered elsewhere is another key) for the calls of
// list_tools and call_tool, so that a call costs its own round trip and
// not a handshake (initialize, initialized) and a DELETE besides. Calls
// share the session at once; one that finds it gone (the daemon restarted,
// expired it, or ended it with its token) opens a new one and is made
// again, but only when it surely did not run.
type daemonSessions struct {
	idle time.Duration

	mu      sync.Mutex
	closed  bool
	entries map[string]*sessionEntry
	// closing counts the sessions being closed off the caller's path
	// (idle, gone), which Close waits for.
	closing sync.WaitGroup
	// stop ends the handshakes in progress when the bridge closes.
	ctx  context.Context
	stop context.CancelFunc
}

// sessionEntry is one Space's session, or its handshake in progress.
type sessionEntry struct {
	ready chan struct{} // closed once the handshake ended; then s or err
	s     *mcpclient.Session
	err   error

	// Under daemonSessions.mu:
	inflight int
	last     time.Time
	timer    *time.Timer
}

// errSessionsClosed answers calls made after the bridge closed.
var errSessionsClosed = errors.New("the bridge is closing")

func newDaemonSessions(idle time.Duration) *daemonSessions {
	ctx, stop := context.WithCancel(context.Background())
	return &daemonSessions{idle: idle, entries: map[string]*sessionEntry{}, ctx: ctx, stop: stop}
}

// connectFunc opens a new session with a Space's daemon.
type connectFunc func(ctx context.Context) (*mcpclient.Session, error)

// do runs f on the session of key, opening it with connect when there is
// none. When f fails with mcpclient.ErrNotProcessed (the session was gone
// before the request ran), or the handshake itself fails (nothing of the
// call was sent), the call is made once more on a new session: the
// handshake may have met a connection the old daemon had closed.
func (p *daemonSessions) do(ctx context.Context, key string, connect connectFunc, f func(*mcpclient.Session) (json.RawMessage, error)) (json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		e, err := p.acquire(ctx, key, connect)
		if err != nil {
			// Not after a handshake that timed out: a second one would
			// double a wait already long.
			if attempt == 0 && ctx.Err() == nil && !errors.Is(err, errSessionsClosed) && !errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			return nil, err
		}
		raw, err := f(e.s)
		p.release(e)
		if err != nil && errors.Is(err, mcpclient.ErrNotProcessed) {
			p.drop(key, e)
			if attempt == 0 && ctx.Err() == nil {
				continue
			}
		}
		return raw, err
	}
}

// acquire answers the live session of key, waiting for its handshake (or
// starting one) as needed; the caller must release it.
func (p *daemonSessions) acquire(ctx context.Context, key string, connect connectFunc) (*sessionEntry, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errSessionsClosed
	}
	e := p.entries[key]
	if e != nil && e.done() && e.s.Err() != nil {
		// Ended under us (its connection failed): a new one.
		p.dropLocked(key, e)
		e = nil
	}
	if e == nil {
		e = &sessionEntry{ready: make(chan struct{})}
		p.entries[key] = e
		// The handshake is the Space's, not this caller's: a caller that
		// leaves does not fail the others waiting on it.
		p.closing.Add(1)
		go p.handshake(key, e, connect)
	}
	e.inflight++
	p.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		p.release(e)
		return nil, ctx.Err()
	}
	if e.err != nil {
		p.release(e)
		return nil, e.err
	}
	return e, nil
}

// handshake opens e's session, bounded by daemonConnectTimeout and the
// bridge's life. A failed one leaves the map, so the next call tries anew.
func (p *daemonSessions) handshake(key string, e *sessionEntry, connect connectFunc) {
	defer p.closing.Done()
	ctx, cancel := context.WithTimeout(p.ctx, daemonConnectTimeout)
	s, err := connect(ctx)
	cancel()
	p.mu.Lock()
	late := err == nil && p.closed // Close has run and did not see it
	switch {
	case err != nil:
		e.err = err
		if p.entries[key] == e {
			delete(p.entries, key)
		}
	case late:
		e.err = errSessionsClosed
	default:
		e.s, e.last = s, time.Now()
		e.timer = time.AfterFunc(p.idle, func() { p.reap(key, e) })
	}
	close(e.ready)
	p.mu.Unlock()
	if late {
		_ = s.Close()
	}
}

func (e *sessionEntry) done() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// release ends one call's use of e.
func (p *daemonSessions) release(e *sessionEntry) {
	p.mu.Lock()
	e.inflight--
	e.last = time.Now()
	p.mu.Unlock()
}

// drop forgets e (its session is gone) and closes it.
func (p *daemonSessions) drop(key string, e *sessionEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(key, e)
}

func (p *daemonSessions) dropLocked(key string, e *sessionEntry) {
	if p.entries[key] != e {
		return // already dropped, maybe replaced
	}
	delete(p.entries, key)
	p.closeLocked(e)
}

// closeLocked closes e's session off the caller's path: its DELETE is a
// round trip (none when the daemon said the session is gone).
func (p *daemonSessions) closeLocked(e *sessionEntry) {
	if e.timer != nil {
		e.timer.Stop()
	}
	if e.s == nil {
		return
	}
	p.closing.Add(1)
	go func() {
		defer p.closing.Done()
		_ = e.s.Close()
	}()
}

// reap closes e once it has been idle for p.idle, or looks again later.
func (p *daemonSessions) reap(key string, e *sessionEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.entries[key] != e {
		return
	}
	if quiet := time.Since(e.last); e.inflight > 0 || quiet < p.idle {
		e.timer.Reset(max(p.idle-quiet, time.Millisecond))
		return
	}
	delete(p.entries, key)
	p.closeLocked(e)
}

// Close ends every session (DELETE to each daemon) and the handshakes in
// progress, and waits for them: after it, no goroutine of this remains.
// Calls in flight fail with the session's end.
func (p *daemonSessions) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.stop()
	for key, e := range p.entries {
		delete(p.entries, key)
		if e.done() {
			p.closeLocked(e)
		}
	}
	p.mu.Unlock()
	p.closing.Wait()
}
