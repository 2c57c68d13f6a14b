package procsvc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// handleStream serves a process's output as WebSocket events from the given
// offsets, and applies the client's stdin, resize and signal messages:
// GET /v1/processes/{id}/stream?stdout_offset=N&stderr_offset=M.
func (s *Service) handleStream(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseProcessStreamQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	p, err := s.processByID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	// Subscribe before the upgrade, so a bad offset answers in our error
	// envelope rather than as a closed socket.
	sub, err := p.Subscribe(q.StdoutOffset, q.StderrOffset)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	st, err := httpapi.Upgrade(w, r, httpapi.StreamOptions{
		OnMessage:  func(ctx context.Context, msg []byte) error { return s.apply(ctx, p, msg) },
		ErrorEvent: func(err error) any { return &api.StreamEvent{Type: "error", Error: api.AsError(err)} },
	})
	if err != nil {
		return // the upgrader has answered the client
	}
	for {
		ev, err := sub.Next(st.Context())
		if errors.Is(err, io.EOF) {
			st.Close(websocket.CloseNormalClosure, "process exited")
			return
		}
		if err != nil {
			// The stream's context ended: the daemon shuts down, the token
			// was rotated, or the client left.
			st.Close(websocket.CloseGoingAway, "")
			return
		}
		if err := st.WriteJSON(ev); err != nil {
			st.Close(websocket.CloseGoingAway, "")
			return
		}
		if ev.Type == "output" {
			s.bytesOut.Add(int64(len(ev.Data)))
		}
	}
}

// apply applies one message a client sent on a process stream.
func (s *Service) apply(ctx context.Context, p *process.Process, msg []byte) error {
	in, err := process.ParseStreamInput(msg)
	if err != nil {
		return err
	}
	switch in.Type {
	case process.InputStdin:
		n, err := p.WriteStdin(ctx, bytes.NewReader(in.Data), false)
		s.bytesIn.Add(n)
		return err
	case process.InputCloseStdin:
		return p.CloseStdin()
	case process.InputResize:
		return p.Resize(*in.Size)
	case process.InputSignal:
		sig, err := process.ParseSignal(in.Signal)
		if err != nil {
			return err
		}
		return p.Signal(sig, true)
	}
	return nil
}
