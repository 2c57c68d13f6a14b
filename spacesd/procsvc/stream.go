package procsvc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// Limits of a process stream WebSocket.
const (
	// streamWriteWait bounds every write: a client that stops reading must
	// not pin the handler (and the process's subscriber) forever.
	streamWriteWait = 10 * time.Second
	// streamPongWait is how long the peer may stay silent (no pong, no
	// message) before the stream is dropped; pings go out at 3/4 of it.
	streamPongWait   = 60 * time.Second
	streamPingPeriod = streamPongWait * 3 / 4
	// streamMaxInputBytes bounds one client message (stdin chunks travel
	// as base64 inside JSON).
	streamMaxInputBytes = 1 << 20
)

var streamUpgrader = websocket.Upgrader{
	ReadBufferSize:  4 << 10,
	WriteBufferSize: process.EventChunkBytes + 4<<10,
	// CheckOrigin nil: gorilla refuses a browser page of another origin.
}

// handleStream serves a process's output as WebSocket events from the given
// offsets, and applies the client's stdin, resize and signal messages:
// GET /v1/processes/{id}/stream?stdout_offset=N&stderr_offset=M.
func (s *Service) handleStream(w http.ResponseWriter, r *http.Request) {
	outOff, err := httpapi.QueryInt(r, "stdout_offset", 0, 0, math.MaxInt64)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	errOff, err := httpapi.QueryInt(r, "stderr_offset", 0, 0, math.MaxInt64)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	p, err := s.processByID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	sub, err := p.Subscribe(outOff, errOff)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	conn, err := streamUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered the client
	}
	defer conn.Close()
	// The request's context ends with the server, and with the session
	// when the token is rotated: so does the stream.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st := &procStream{s: s, p: p, conn: conn, cancel: cancel}

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); defer cancel(); st.readInputs(ctx) }()
	go func() { defer wg.Done(); st.ping(ctx) }()
	st.writeEvents(ctx, sub)
	cancel()
	// Unblock the reader: it may sit in ReadMessage for a silent client.
	_ = conn.Close()
	wg.Wait()
}

// procStream is one open process stream. Writes come from two goroutines
// (events, and errors of the client's messages), so they take writeMu.
type procStream struct {
	s       *Service
	p       *process.Process
	conn    *websocket.Conn
	cancel  context.CancelFunc
	writeMu sync.Mutex
}

func (st *procStream) write(ev *api.StreamEvent) error {
	st.writeMu.Lock()
	defer st.writeMu.Unlock()
	_ = st.conn.SetWriteDeadline(time.Now().Add(streamWriteWait))
	return st.conn.WriteJSON(ev)
}

func (st *procStream) closeWith(code int, reason string) {
	msg := websocket.FormatCloseMessage(code, truncateReason(reason))
	_ = st.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(streamWriteWait))
}

// writeEvents sends the process's output until exit, the client goes
// away, or ctx ends.
func (st *procStream) writeEvents(ctx context.Context, sub *process.Subscriber) {
	for {
		ev, err := sub.Next(ctx)
		if errors.Is(err, io.EOF) {
			st.closeWith(websocket.CloseNormalClosure, "process exited")
			return
		}
		if err != nil {
			// ctx ended: the server shuts down, the token was rotated, or
			// the reader saw the client leave.
			st.closeWith(websocket.CloseGoingAway, "stream ended by the daemon (shutdown or token rotation)")
			return
		}
		if err := st.write(ev); err != nil {
			return
		}
		if ev.Type == "output" {
			st.s.bytesOut.Add(int64(len(ev.Data)))
		}
	}
}

// readInputs applies the client's messages until the connection ends. A
// message that cannot be applied answers an "error" event; the stream goes on.
func (st *procStream) readInputs(ctx context.Context) {
	st.conn.SetReadLimit(streamMaxInputBytes)
	_ = st.conn.SetReadDeadline(time.Now().Add(streamPongWait))
	st.conn.SetPongHandler(func(string) error {
		return st.conn.SetReadDeadline(time.Now().Add(streamPongWait))
	})
	for {
		_, msg, err := st.conn.ReadMessage()
		if err != nil {
			return
		}
		_ = st.conn.SetReadDeadline(time.Now().Add(streamPongWait))
		if err := st.apply(ctx, msg); err != nil {
			if werr := st.write(&api.StreamEvent{Type: "error", Error: api.AsError(err)}); werr != nil {
				return
			}
		}
	}
}

func (st *procStream) apply(ctx context.Context, msg []byte) error {
	in, err := process.ParseStreamInput(msg)
	if err != nil {
		return err
	}
	switch in.Type {
	case process.InputStdin:
		n, err := st.p.WriteStdin(ctx, bytes.NewReader(in.Data), false)
		st.s.bytesIn.Add(n)
		return err
	case process.InputCloseStdin:
		return st.p.CloseStdin()
	case process.InputResize:
		return st.p.Resize(*in.Size)
	case process.InputSignal:
		sig, err := process.ParseSignal(in.Signal)
		if err != nil {
			return err
		}
		return st.p.Signal(sig, true)
	}
	return nil
}

// ping keeps the connection alive through idle periods and proves the peer
// is still there (its pongs extend the read deadline).
func (st *procStream) ping(ctx context.Context) {
	t := time.NewTicker(streamPingPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := st.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(streamWriteWait)); err != nil {
				st.cancel()
				return
			}
		}
	}
}

// truncateReason fits a close reason in a control frame (125 bytes, 2 for the code).
func truncateReason(s string) string {
	const maxReason = 123
	if len(s) > maxReason {
		return s[:maxReason]
	}
	return s
}
