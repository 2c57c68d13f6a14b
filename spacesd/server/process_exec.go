package server

import (
	"net/http"

	"github.com/trycua/cua-spacesd/capabilities/process"
)

// handleExec runs a command to completion: POST /v1/exec.
func (g *processGroup) handleExec(w http.ResponseWriter, r *http.Request) {
	body, err := readJSONBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := process.ParseExecRequest(body)
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := g.m.Exec(r.Context(), req)
	if res != nil { // it ran (even if the caller left meanwhile)
		g.s.metrics.ProcessesStarted.Add(1)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	g.s.metrics.BytesOut.Add(int64(len(res.Stdout) + len(res.Stderr)))
	writeJSON(w, http.StatusOK, res)
}
