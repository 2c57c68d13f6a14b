package streamsvc

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// deleteSession ends a viewer (WHEP's DELETE of the Location). The token
// ends any session; a ticket only the sessions it opened (itself or a
// renewal of it, which carries its ID). Another's session is answered as
// one that does not exist: a ticket learns nothing of sessions not its own.
func (s *Service) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	sess, ok := s.sessions[id]
	s.mu.Unlock()
	caller := server.CallerOf(r.Context())
	if t := caller.Ticket; ok && t != nil && t.ID != sess.ticket {
		ok = false
	}
	if p := caller.Principal; ok && caller.Ticket == nil && p != nil && p.Role == server.RoleViewer && p.Person != sess.person {
		ok = false // a viewer ends its own sessions, not another's
	}
	if !ok {
		httpapi.WriteError(w, api.Errorf(api.KindNotFound, "no stream session %q of this caller: it ended, never was, or was opened by another ticket or the token", id).
			WithHint("a ticket ends only the sessions it opened; the token ends any"))
		return
	}
	sess.viewer.Close()
	httpapi.Answer(w, httpapi.NoContent{}, nil)
}

// listSessions answers GET /v1/stream/sessions: every live viewer, its
// target and its media's path (the owner's view of who watches, and how
// the media travels). The token only (no ticket scope): a ticket must not
// learn of other viewers. Ticket IDs are never listed.
func (s *Service) listSessions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := make([]api.StreamSession, 0, len(s.sessions))
	for id, sess := range s.sessions {
		p := sess.path.Load()
		ss := api.StreamSession{ID: id, Target: api.StreamTarget(sess.windowID), WindowID: sess.windowID,
			ViewOnly: sess.viewOnly, ByTicket: sess.ticket != "", Connected: p != nil, Path: p, StartedAt: sess.started,
			Name: sess.name, Role: string(sess.role)}
		if sess.viewer != nil {
			st := sess.viewer.Startup()
			ss.Startup = &st
		}
		out = append(out, ss)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b api.StreamSession) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), strings.Compare(a.ID, b.ID))
	})
	httpapi.WriteJSON(w, http.StatusOK, api.StreamSessions{Sessions: out})
}
