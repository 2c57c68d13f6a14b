package streamsvc

import (
	"crypto/tls"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// errRelayOnlyNoTURN answers ?ice=relay on an offer that has no TURN
// server to relay it: one that came on the Space's own port, where no
// relay is in the way.
var errRelayOnlyNoTURN = api.Errorf(api.KindInvalidArgument,
	"%s=%s: the relay-only path needs a TURN server, and this offer brought none: only an offer through cua-relay has one (the relay's)", api.QueryICE, api.ICERelay).
	WithHint("open the stream through the relay (https://RELAY/c/<computer>/...), or drop ice=relay to go direct")

// callerICE is what a caller's connection brings for its viewers' ICE.
type callerICE struct {
	api.StreamICE
	tls *tls.Config
}

// iceOf is the ICE servers of a caller's viewers: those its relayed
// connection brought (the relay's TURN, with this view's credential),
// none on the Space's own port.
func iceOf(c server.Caller) callerICE {
	out := callerICE{StreamICE: api.StreamICE{ICEServers: []api.ICEServer{}}}
	if p := c.Principal; p != nil && len(p.ICEServers) > 0 {
		out.ICEServers, out.tls = p.ICEServers, p.TURNTLS
	}
	return out
}

// iceServers answers GET /v1/stream/ice: the ICE servers this Space adds
// for the caller's viewer, a list (empty, never null) that cua-relay
// extends with its own TURN server and the viewer's credential.
func (s *Service) iceServers(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, iceOf(server.CallerOf(r.Context())).StreamICE)
}
