package procsvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// handleStart starts a detached process: POST /v1/processes.
func (s *Service) handleStart(w http.ResponseWriter, r *http.Request) {
	body, err := httpapi.ReadJSONBody(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	req, err := process.ParseStartRequest(body)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if req.PTY != nil {
		if st := s.feature(r.Context(), api.FeaturePTY); !st.Supported {
			httpapi.WriteError(w, api.CapabilityMissing(api.FeaturePTY, st.Limitation))
			return
		}
	}
	// The process is the Manager's from here on, not the request's: it
	// outlives this call and the connection.
	p, err := s.m.Start(req)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	s.started.Add(1)
	httpapi.WriteJSON(w, http.StatusCreated, p.Info())
}

// handleList lists remembered processes: GET /v1/processes.
func (s *Service) handleList(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, s.m.List())
}

// handleGet describes one process: GET /v1/processes/{id}.
func (s *Service) handleGet(w http.ResponseWriter, r *http.Request) {
	p, err := s.processByID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, p.Info())
}
