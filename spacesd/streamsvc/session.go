package streamsvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// deleteSession ends a viewer (WHEP's DELETE of the Location). A ticket
// ends only sessions of its own target.
func (s *Service) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	sess, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		httpapi.WriteError(w, api.Errorf(api.KindNotFound, "no stream session %q: it ended, or never was", id))
		return
	}
	if t := server.CallerOf(r.Context()).Ticket; t != nil && t.Target != sess.target {
		httpapi.WriteError(w, api.Errorf(api.KindForbidden, "the ticket is for the stream of %s, not of %s", t.Target, sess.target))
		return
	}
	sess.viewer.Close()
	httpapi.Answer(w, httpapi.NoContent{}, nil)
}
