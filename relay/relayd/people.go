package relayd

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/store"
)

// The streams of each person on a session: what Share.Connected reports
// and what an unshare closes.

// track records conn as a stream of c until it closes. A shared person's
// first stream of a role writes an attach line to the audit and their last
// a detach line: one pair per person (and role) while they are connected,
// not one per stream.
func (ss *session) track(conn *countedConn, c caller) {
	conn.person, conn.role = c.id, c.role
	key := c.id + "\x00" + string(c.role)
	ss.mu.Lock()
	if ss.open == nil {
		ss.open = map[*countedConn]struct{}{}
		ss.people = map[string]int{}
	}
	ss.open[conn] = struct{}{}
	first := shared(c.role) && ss.people[key] == 0
	if shared(c.role) {
		ss.people[key]++
	}
	ss.mu.Unlock()
	if first {
		// Before the stream is used: the attach line is in the store
		// ahead of its detach.
		ss.srv.audit(store.AuditAttach, ss.comp.Name, attachDetail(c.name, c.role))
	}
	release := conn.release
	conn.release = func() {
		ss.mu.Lock()
		delete(ss.open, conn)
		last := false
		if shared(c.role) {
			ss.people[key]--
			last = ss.people[key] == 0
			if last {
				delete(ss.people, key)
			}
		}
		why := conn.why
		ss.mu.Unlock()
		release()
		if last {
			if why == "" {
				why = "their last stream closed"
			}
			// Off the closing goroutine: a cut closes many streams, and
			// none should wait on the store.
			ts := ss.srv.clock.Now()
			go ss.srv.auditAt(ts, store.AuditDetach, ss.comp.Name, c.name+" as "+string(c.role)+": "+why)
		}
	}
}

// attachDetail is the detail of a shared person's attach line; an
// editor's says it is a human input session (the seed's words).
func attachDetail(name string, role protocol.Role) string {
	if role == protocol.RoleEditor {
		return name + " as editor: a human input session"
	}
	return name + " as " + string(role) + ": viewing"
}

// hasStreams reports whether person has a stream open to the session.
func (ss *session) hasStreams(person string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for c := range ss.open {
		if c.person == person {
			return true
		}
	}
	return false
}

// shared reports whether a stream of role was opened by a share (not the
// owner's, nor a viewer link's, which the owner's tickets authorise).
func shared(role protocol.Role) bool {
	return role == protocol.RoleViewer || role == protocol.RoleEditor
}

// kick tells the Space to end person's sessions (protocol.KickAll: every
// shared person's) and cuts their streams through the relay. The Kick goes
// first: the Space's own sessions (PTYs, streams) end on it.
func (ss *session) kick(person, why string) {
	if err := ss.ctrl.WriteMessage(protocol.Kick{Person: person, Reason: protocol.CloseKicked, Message: trimText(why)}); err != nil {
		ss.log.Warn("kick", "person", person, "err", err)
	}
	ss.cut(person, "kicked: "+trimText(why))
}

// cut closes person's streams (KickAll: every shared person's) and their
// pooled transports: their next request opens a stream whose grant is
// minted from the shares as they are now. why is their detach line's.
func (ss *session) cut(person, why string) {
	ss.mu.Lock()
	var conns []*countedConn
	var ts []*http.Transport
	for c := range ss.open {
		if person == protocol.KickAll && shared(c.role) || c.person == person {
			conns = append(conns, c)
			if c.why == "" {
				c.why = why
			}
		}
	}
	for key, t := range ss.transports {
		id, rest, _ := strings.Cut(key, "\x00")
		if person == protocol.KickAll && (strings.HasPrefix(rest, string(protocol.RoleViewer)) || strings.HasPrefix(rest, string(protocol.RoleEditor))) || id == person {
			ts = append(ts, t)
			delete(ss.transports, key)
		}
	}
	ss.mu.Unlock()
	// Outside ss.mu: a stream's Close takes it.
	for _, t := range ts {
		t.CloseIdleConnections()
	}
	for _, c := range conns {
		_ = c.Close()
	}
}

// liveShared is the highest role each shared person has on a live stream
// of the session.
func (ss *session) liveShared() map[string]protocol.Role {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := map[string]protocol.Role{}
	for c := range ss.open {
		if shared(c.role) && out[c.person] != protocol.RoleEditor {
			out[c.person] = c.role
		}
	}
	return out
}

// recheckLoop reads the shares of every person with a live stream again
// every Limits.Recheck until ctx ends (DESIGN §4: a re-check catches a
// lost revocation).
func (s *Server) recheckLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.Limits.Recheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.recheck(ctx)
			s.sweepRemotes()
		}
	}
}

// recheck kicks, on every attached computer, the people whose share is
// gone or whose role is lower than a live stream of theirs carries: the
// same Kick and cut an unshare does.
func (s *Server) recheck(ctx context.Context) {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		for p, had := range ss.liveShared() {
			if p == ss.comp.Owner {
				continue
			}
			now, err := s.cfg.Store.RoleOf(ctx, ss.comp.Name, p)
			if err != nil {
				// A store that cannot answer revokes nothing: the next
				// round tries again.
				s.log.Warn("share recheck", "computer", ss.comp.Name, "err", err)
				continue
			}
			if now == "" || had == protocol.RoleEditor && now != protocol.RoleEditor {
				s.log.Info("share recheck: revoked", "computer", ss.comp.Name, "person", p, "had", had, "now", now)
				ss.kick(p, "the share ended")
			}
		}
	}
}
