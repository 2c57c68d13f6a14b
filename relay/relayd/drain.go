package relayd

import (
	"net/http"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Drain: before a node is stopped (a rolling restart), its Spaces move to
// the other nodes of the relay with no session lost for longer than one
// redial. The node sends go_away with a reconnect delay to every Space,
// refuses new attaches (503 going_away, Retry-After: a Space lands on
// another node), and keeps proxying what is in flight for a grace period:
// a Space leaves its old session once nothing is open on it, and the node
// ends what is left at the grace's end. It stays draining until it stops.
const (
	// DefaultDrainRetryAfter is a drain's reconnect delay by default.
	DefaultDrainRetryAfter = 2 * time.Second
	// DefaultDrainGrace is how long a drain lets what is in flight finish
	// by default.
	DefaultDrainGrace = 30 * time.Second
	// MaxDrainGrace bounds the grace period.
	MaxDrainGrace = time.Hour
	// drainPoll is how often a drain closes the idle relayed connections
	// of the sessions told to go away (an idle keep-alive stream would
	// hold its session open) and counts the sessions that left.
	drainPoll = 250 * time.Millisecond
)

// drainState is a draining node's: since when, and the Retry-After its
// refusals name.
type drainState struct {
	since      time.Time
	retryAfter time.Duration
}

// Drain drains the node (see above) and reports once every session told
// to go away has left or the grace period is over. A second drain tells
// the Spaces attached since (none: attaches are refused) and takes the
// new delay.
func (s *Server) Drain(retryAfter, grace time.Duration) (relayapi.DrainReport, error) {
	if retryAfter < 0 || retryAfter > protocol.MaxRetryAfter {
		return relayapi.DrainReport{}, api.Errorf(api.KindInvalidArgument, "retry after %s: want 0 to %s", retryAfter, protocol.MaxRetryAfter)
	}
	if grace < 0 || grace > MaxDrainGrace {
		return relayapi.DrainReport{}, api.Errorf(api.KindInvalidArgument, "grace %s: want 0 to %s", grace, MaxDrainGrace)
	}
	start := time.Now()
	s.mu.Lock()
	if s.drain == nil {
		s.drain = &drainState{since: s.clock.Now()}
	}
	s.drain.retryAfter = retryAfter
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	s.log.Info("draining", "sessions", len(all), "retry_after", retryAfter, "grace", grace)
	goAway := protocol.GoAway{Reason: protocol.CloseGoingAway, Message: "relay node draining: attach to another node", RetryAfter: protocol.MillisOf(retryAfter)}
	var wg sync.WaitGroup
	for _, ss := range all {
		wg.Go(func() { _ = ss.ctrl.WriteMessage(goAway) })
	}
	wg.Wait()
	rep := relayapi.DrainReport{Node: s.cfg.Node, Draining: true, RetryAfterMS: retryAfter.Milliseconds(), GraceMS: grace.Milliseconds(), Sessions: len(all)}
	rep.Left, rep.Cut = waitLeft(all, grace)
	rep.TookMS = time.Since(start).Milliseconds()
	s.log.Info("drained", "sessions", rep.Sessions, "left", rep.Left, "cut", rep.Cut, "took_ms", rep.TookMS)
	return rep, nil
}

// waitLeft waits up to grace for the sessions to end, closing their idle
// relayed connections meanwhile, ends those still there, and answers how
// many left and how many were cut.
func waitLeft(all []*session, grace time.Duration) (left, cut int) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		var open []*session
		for _, ss := range all {
			select {
			case <-ss.done:
			default:
				open = append(open, ss)
			}
		}
		if len(open) == 0 {
			return len(all), 0
		}
		select {
		case <-deadline.C:
			for _, ss := range open {
				ss.end(protocol.CloseGoingAway, "relay node drained")
			}
			return len(all) - len(open), len(open)
		case <-tick.C:
			for _, ss := range open {
				ss.closeIdle()
			}
		}
	}
}

// closeIdle closes the session's idle relayed connections: a request in
// flight keeps its own until it is answered.
func (ss *session) closeIdle() {
	ss.mu.Lock()
	ts := make([]*http.Transport, 0, len(ss.transports))
	for _, t := range ss.transports {
		ts = append(ts, t)
	}
	ss.mu.Unlock()
	for _, t := range ts {
		t.CloseIdleConnections()
	}
}

// draining answers the Retry-After of a draining node's refusals, and
// whether it drains.
func (s *Server) draining() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drain == nil {
		return 0, false
	}
	return s.drain.retryAfter, true
}

// NodeStatus is the node's state (GET relayapi.PathAdminNode).
func (s *Server) NodeStatus() relayapi.NodeStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := relayapi.NodeStatus{Node: s.cfg.Node, Version: s.cfg.Version, URLs: append([]string{}, s.cfg.URLs...), Sessions: len(s.sessions)}
	if s.drain != nil {
		st.Draining, st.DrainingSinceMS = true, s.drain.since.UnixMilli()
	}
	return st
}

func (s *Server) adminDrain(w http.ResponseWriter, r *http.Request) {
	retry, grace, err := drainParams(r)
	if err != nil {
		writeError(w, err)
		return
	}
	rep, err := s.Drain(retry, grace)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// drainParams reads a drain's body (none, or a relayapi.DrainRequest):
// its reconnect delay and grace, zero ones the defaults, both in bounds.
func drainParams(r *http.Request) (retry, grace time.Duration, err error) {
	var req relayapi.DrainRequest
	if r.ContentLength != 0 {
		if err := readJSON(r, &req); err != nil {
			return 0, 0, err
		}
	}
	retry, grace = DefaultDrainRetryAfter, DefaultDrainGrace
	// Bounded before the multiplication: a huge count of milliseconds
	// must not wrap into a valid duration.
	if req.RetryAfterMS < 0 || req.RetryAfterMS > protocol.MaxRetryAfter.Milliseconds() {
		return 0, 0, api.Errorf(api.KindInvalidArgument, "retry_after_ms %d: want 0 to %d", req.RetryAfterMS, protocol.MaxRetryAfter.Milliseconds())
	}
	if req.GraceMS < 0 || req.GraceMS > MaxDrainGrace.Milliseconds() {
		return 0, 0, api.Errorf(api.KindInvalidArgument, "grace_ms %d: want 0 to %d", req.GraceMS, MaxDrainGrace.Milliseconds())
	}
	if req.RetryAfterMS != 0 {
		retry = time.Duration(req.RetryAfterMS) * time.Millisecond
	}
	if req.GraceMS != 0 {
		grace = time.Duration(req.GraceMS) * time.Millisecond
	}
	return retry, grace, nil
}

func (s *Server) adminNode(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.NodeStatus())
}
