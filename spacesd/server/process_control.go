package server

import (
	"errors"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
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
	answer(w, noContent{}, err)
}

// signal signals a process (its whole group unless group is false):
// POST /v1/processes/{id}/signal.
func (g *processGroup) signal(r *http.Request, req api.SignalRequest) (noContent, error) {
	sig, err := process.ParseSignal(req.Signal)
	if err != nil {
		return noContent{}, err
	}
	p, err := g.processByID(r)
	if err != nil {
		return noContent{}, err
	}
	return noContent{}, p.Signal(sig, req.Group == nil || *req.Group)
}

// resize sets a PTY process's terminal size: POST /v1/processes/{id}/resize.
func (g *processGroup) resize(r *http.Request, size api.PTYSize) (noContent, error) {
	p, err := g.processByID(r)
	if err != nil {
		return noContent{}, err
	}
	return noContent{}, p.Resize(size)
}

func asMaxBytes(err error, target **http.MaxBytesError) bool { return errors.As(err, target) }
