package server

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

// handleStart starts a detached process: POST /v1/processes.
func (g *processGroup) handleStart(w http.ResponseWriter, r *http.Request) {
	body, err := readJSONBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := process.ParseStartRequest(body)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.PTY != nil {
		if st := g.s.featureStatus(r.Context(), api.FeaturePTY); !st.Supported {
			writeError(w, api.CapabilityMissing(api.FeaturePTY, st.Limitation))
			return
		}
	}
	// The process is the Manager's from here on, not the request's: it
	// outlives this call and the connection.
	p, err := g.m.Start(req)
	if err != nil {
		writeError(w, err)
		return
	}
	g.s.metrics.ProcessesStarted.Add(1)
	writeJSON(w, http.StatusCreated, p.Info())
}

// handleList lists remembered processes: GET /v1/processes.
func (g *processGroup) handleList(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, g.m.List())
}

// handleGet describes one process: GET /v1/processes/{id}.
func (g *processGroup) handleGet(w http.ResponseWriter, r *http.Request) {
	p, err := g.processByID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p.Info())
}
