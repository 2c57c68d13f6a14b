package streamsvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// viewerRoute serves the built-in viewer page (media/viewer) without a
// token: its files hold no data, and the page reaches the stream only
// through the offer and session routes, with the ticket of its link.
// Served whether or not the streams can run, so that the page can say
// why not (the offer's capability_missing).
func (s *Service) viewerRoute() server.Route {
	return server.Route{Method: http.MethodGet, Path: api.PathViewer, Public: true, Handler: s.page.ServeHTTP}
}
