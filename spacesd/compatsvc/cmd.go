package compatsvc

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// serveCmd is POST /cmd: one command in the body, answered as
// computer-server answers it, as one server-sent line: "data: <answer>"
// and a blank line, in a text/plain body. A command that ran answers 200,
// whether it succeeded or not; a body that is no command (bad JSON, an
// unknown command, wrong params) answers 400 with the same line, so that
// both a client reading the status and one reading the line see it.
func (s *Service) serveCmd(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMessageBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.writeData(w, http.StatusRequestEntityTooLarge, api.Errorf(api.KindLimitExceeded,
				"the command is over %d bytes; write big files in chunks (write_bytes with append)", MaxMessageBytes).WithRetryable(false))
			return
		}
		s.writeData(w, http.StatusBadRequest, api.Errorf(api.KindTransferFailed, "read the command: %w", err))
		return
	}
	answer, ran := s.answer(r.Context(), s.cmdConn, body)
	status := http.StatusOK
	if !ran {
		status = http.StatusBadRequest
	}
	writeLine(w, status, answer)
}

// answer decodes, binds and runs one message; ran is false when it was no
// command that could run.
func (s *Service) answer(ctx context.Context, c *conn, msg []byte) (answer []byte, ran bool) {
	m, err := decodeMessage(msg)
	var cl call
	if err == nil {
		cl, err = bind(s.table, m)
	}
	if err != nil {
		s.observe(ctx, "", err, 0)
		return failure(err, nil), false
	}
	return s.run(ctx, c, cl), true
}

// writeData answers err as a line of POST /cmd.
func (s *Service) writeData(w http.ResponseWriter, status int, err error) {
	if kr, ok := w.(httpapi.KindRecorder); ok {
		kr.RecordKind(api.KindOf(err))
	}
	writeLine(w, status, failure(err, nil))
}

func writeLine(w http.ResponseWriter, status int, answer []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("data: "))
	_, _ = w.Write(answer)
	_, _ = w.Write([]byte("\n\n"))
}
