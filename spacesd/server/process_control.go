package server

import (
	"errors"
	"net/http"

	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/api"
)

// handleStdin writes the raw body to a process's stdin:
// POST /v1/processes/{id}/stdin[?close=true].
func (g *processGroup) handleStdin(w http.ResponseWriter, r *http.Request) {
	closeAfter, err := queryBool(r, "close")
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := g.processByID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	n, err := p.WriteStdin(r.Context(), r.Body, closeAfter)
	g.s.metrics.BytesIn.Add(n)
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleSignal signals a process (its whole group unless group is false):
// POST /v1/processes/{id}/signal.
func (g *processGroup) handleSignal(w http.ResponseWriter, r *http.Request) {
	req, err := decodeBody[api.SignalRequest](r)
	if err != nil {
		writeError(w, err)
		return
	}
	sig, err := process.ParseSignal(req.Signal)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := g.processByID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := p.Signal(sig, req.Group == nil || *req.Group); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleResize sets a PTY process's terminal size:
// POST /v1/processes/{id}/resize.
func (g *processGroup) handleResize(w http.ResponseWriter, r *http.Request) {
	size, err := decodeBody[api.PTYSize](r)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := g.processByID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := p.Resize(size); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func asMaxBytes(err error, target **http.MaxBytesError) bool { return errors.As(err, target) }
