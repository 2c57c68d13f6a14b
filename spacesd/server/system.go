package server

import (
	"bytes"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// systemRoutes are the daemon's own routes, whatever its services.
func (s *Server) systemRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: api.PathHealth, Public: true, Handler: s.handleHealth},
		{Method: http.MethodGet, Path: api.PathCapabilities, Roles: ViewerRoles(), Handler: s.handleCapabilities},
		{Method: http.MethodGet, Path: api.PathMetrics, Roles: EditorRoles(), Handler: s.handleMetrics},
	}
}

// handleHealth names the daemon without auth, so a client can tell "no
// spacesd here" from "wrong token". It reveals nothing else.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, api.Health{
		Daemon: api.DaemonName, Version: s.cfg.Version, Protocol: api.ProtocolVersion, Status: "ok",
	})
}

func (s *Server) handleCapabilities(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, s.Capabilities(r.Context()))
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	// Render first, send after: the metrics lock is one every request
	// takes when it ends, and a scraper that stops reading must not hold it.
	var buf bytes.Buffer
	s.metrics.write(&buf)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write(buf.Bytes())
}
