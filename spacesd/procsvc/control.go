package procsvc

import (
	"errors"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// handleStdin writes the raw body to a process's stdin and answers how many
// bytes the process accepted: POST /v1/processes/{id}/stdin[?close=true].
func (s *Service) handleStdin(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseStdinQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	p, err := s.processByID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	n, err := p.WriteStdin(r.Context(), r.Body, q.Close)
	s.bytesIn.Add(n)
	httpapi.Answer(w, api.StdinResult{Bytes: n}, err)
}

// signal signals a process (its whole tree unless group is false):
// POST /v1/processes/{id}/signal.
func (s *Service) signal(r *http.Request, req api.SignalRequest) (httpapi.NoContent, error) {
	sig, err := process.ParseSignal(req.Signal)
	if err != nil {
		return httpapi.NoContent{}, err
	}
	p, err := s.processByID(r)
	if err != nil {
		return httpapi.NoContent{}, err
	}
	return httpapi.NoContent{}, p.Signal(sig, req.Group == nil || *req.Group)
}

// resize sets a PTY process's terminal size: POST /v1/processes/{id}/resize.
func (s *Service) resize(r *http.Request, size api.PTYSize) (httpapi.NoContent, error) {
	p, err := s.processByID(r)
	if err != nil {
		return httpapi.NoContent{}, err
	}
	return httpapi.NoContent{}, p.Resize(size)
}

func asMaxBytes(err error, target **http.MaxBytesError) bool { return errors.As(err, target) }
