package procsvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// handleExec runs a command to completion: POST /v1/exec.
func (s *Service) handleExec(w http.ResponseWriter, r *http.Request) {
	body, err := httpapi.ReadJSONBody(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	req, err := process.ParseExecRequest(body)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	res, err := s.m.Exec(r.Context(), req)
	if res != nil { // it ran (even if the caller left meanwhile)
		s.started.Add(1)
	}
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	s.bytesOut.Add(int64(len(res.Stdout) + len(res.Stderr)))
	httpapi.WriteJSON(w, http.StatusOK, res)
}
