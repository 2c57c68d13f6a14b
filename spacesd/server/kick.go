package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// ErrKicked ends what a person held (a stream's viewer, a session) when
// their access ended: an unshare, a revocation (the relay's Kick).
var ErrKicked = api.Errorf(api.KindPermissionDenied, "this person's access to the Space ended (unshared or revoked)").
	WithHint("ask the Space's owner to share it again")

// holds are the sessions that outlive their request and belong to a
// person (Host.Hold): a stream's viewer opened by a principal or with a
// ticket a principal minted. A kick ends a person's at once; their
// connections are the service's that brought them (it closes those).
type holds struct {
	mu sync.Mutex
	m  map[*hold]struct{}
	// kicks are the recent kicks, for the tickets of their persons
	// minted before them (a ticket outlives no kick). Kept as long as a
	// ticket lives (api.MaxTicketTTLSeconds), so a handful at most.
	kicks []kickRecord
}

type kickRecord struct {
	at    time.Time
	match func(person string, role Role) bool
}

type hold struct {
	person string
	role   Role
	cancel context.CancelCauseFunc
}

// PersonOf is the person a caller acts for, and their role: the
// principal's, or the minter's of its ticket; "" for the token's holder
// (and a link's ticket minted by the token), whom no kick reaches.
func PersonOf(c Caller) (string, Role) {
	if c.Principal != nil && c.Principal.Role != RoleLink {
		return c.Principal.Person, c.Principal.Role
	}
	if c.Ticket != nil && c.Ticket.Person != "" {
		return c.Ticket.Person, c.Ticket.Role
	}
	return "", ""
}

// PersonNameOf is how people see the person PersonOf answers (the
// relay's user name, as its grant or the ticket it minted says it); ""
// for the token's holder, or when only the person's id is known.
func PersonNameOf(c Caller) string {
	if c.Principal != nil && c.Principal.Role != RoleLink {
		return c.Principal.PersonName
	}
	if c.Ticket != nil && c.Ticket.Person != "" {
		return c.Ticket.PersonName
	}
	return ""
}

// hold ties a context that outlives its request to the token generation
// of c (as Auth.Session) and to the person c acts for, whom a Kick ends.
func (s *Server) hold(parent context.Context, c Caller) (context.Context, context.CancelCauseFunc) {
	ctx, endSession := s.auth.Session(parent, c.Generation)
	person, role := PersonOf(c)
	if person == "" {
		return ctx, endSession
	}
	ctx, cancel := context.WithCancelCause(ctx)
	h := &hold{person: person, role: role, cancel: cancel}
	s.holds.mu.Lock()
	if s.holds.m == nil {
		s.holds.m = map[*hold]struct{}{}
	}
	s.holds.m[h] = struct{}{}
	s.holds.mu.Unlock()
	return ctx, func(cause error) {
		s.holds.mu.Lock()
		delete(s.holds.m, h)
		s.holds.mu.Unlock()
		cancel(cause)
		endSession(cause)
	}
}

// Kick ends, with ErrKicked, every held session of the persons match
// names (Host.Hold) and answers how many. The relay service calls it on
// the relay's Kick, beside closing the person's relayed connections.
func (s *Server) Kick(match func(person string, role Role) bool) int {
	now := time.Now()
	s.holds.mu.Lock()
	s.holds.kicks = slices.DeleteFunc(s.holds.kicks, func(k kickRecord) bool { return now.Sub(k.at) > ticketLife })
	s.holds.kicks = append(s.holds.kicks, kickRecord{at: now, match: match})
	var out []*hold
	for h := range s.holds.m {
		if match(h.person, h.role) {
			out = append(out, h)
		}
	}
	s.holds.mu.Unlock()
	for _, h := range out {
		h.cancel(ErrKicked)
	}
	return len(out)
}

// ticketLife bounds how long a kick is remembered: a ticket minted before
// it is dead by then anyway. A renewal is minted afresh, but only by a
// live stream of the ticket's, which the kick ended.
const ticketLife = api.MaxTicketTTLSeconds*time.Second + time.Minute

// errKickedTicket refuses a ticket its person minted before a kick.
var errKickedTicket = api.Errorf(api.KindPermissionDenied, "this ticket was minted by someone whose access to the Space ended since").
	WithHint("ask the Space's owner to share it again, then open a new link")

// checkKicked refuses t when its person was kicked after it was minted.
func (s *Server) checkKicked(t Ticket) error {
	if t.Person == "" {
		return nil
	}
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	for _, k := range s.holds.kicks {
		if !t.Issued.After(k.at) && k.match(t.Person, t.Role) {
			return errKickedTicket
		}
	}
	return nil
}
