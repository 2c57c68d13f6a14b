package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
)

// StreamWriteWait bounds every write of a stream: a client that stops
// reading must not pin the handler (and what feeds it) for ever.
const StreamWriteWait = 10 * time.Second

// errPeerLeft is the cause of a stream's end when the client closed it or
// its connection broke.
var errPeerLeft = errors.New("the client closed the stream")

// upgrader is the one upgrader of every stream. CheckOrigin stays nil:
// gorilla then refuses a page of another origin, as the server's browser
// check already did.
var upgrader = websocket.Upgrader{ReadBufferSize: 4 << 10, WriteBufferSize: 64 << 10}

// Stream is one WebSocket stream of the daemon, with the same keep-alive,
// deadlines and read limit whatever it carries: JSON messages go out one
// at a time, each bounded by StreamWriteWait; the client's messages come in
// through a handler; a ping goes out every api.StreamPingInterval and a
// peer silent for api.StreamIdleTimeout is dropped. Its context ends when
// the request's does (shutdown, token rotation), when the client leaves,
// or at Close.
type Stream struct {
	conn   *websocket.Conn
	ping   time.Duration
	idle   time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
	// writeMu orders the messages of the handler and the error answers to
	// the client's messages: gorilla allows one writer of data messages
	// (control frames may be written by anyone at any time).
	writeMu sync.Mutex
	wg      sync.WaitGroup
}

// OnMessage handles one message the client sent. An error is answered
// with errorEvent(err), when that is set, and the stream goes on.
type OnMessage func(ctx context.Context, msg []byte) error

// StreamOptions adjust Upgrade.
type StreamOptions struct {
	// OnMessage handles the client's messages; nil reads and drops them
	// (the read loop is still what notices the client leaving).
	OnMessage OnMessage
	// ErrorEvent turns an error of OnMessage into the message answering
	// it; nil answers nothing.
	ErrorEvent func(error) any
	// PingInterval and IdleTimeout replace the contract's keep-alive
	// (api.StreamPingInterval, api.StreamIdleTimeout) when set.
	PingInterval, IdleTimeout time.Duration
	// MaxMessageBytes replaces api.StreamMaxMessageBytes as the bound of
	// one message from the client, when set (see also SetReadLimit).
	MaxMessageBytes int64
}

// Upgrade answers the WebSocket upgrade of r and starts the stream's
// reader and pinger. On failure the upgrader has answered the client.
func Upgrade(w http.ResponseWriter, r *http.Request, o StreamOptions) (*Stream, error) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	s := &Stream{conn: conn, ctx: ctx, cancel: cancel,
		ping: cmp.Or(o.PingInterval, api.StreamPingInterval), idle: cmp.Or(o.IdleTimeout, api.StreamIdleTimeout)}
	conn.SetReadLimit(cmp.Or(o.MaxMessageBytes, api.StreamMaxMessageBytes))
	s.alive()
	conn.SetPongHandler(func(string) error { s.alive(); return nil })
	conn.SetPingHandler(func(data string) error {
		s.alive()
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(StreamWriteWait))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	s.wg.Add(2)
	go s.read(o)
	go s.keepAlive()
	return s, nil
}

// SetReadLimit changes the bound of the client's next messages: a stream
// that takes big messages only from an authenticated client raises it once
// the client is. Call it only from OnMessage, which runs on the reader.
func (s *Stream) SetReadLimit(n int64) { s.conn.SetReadLimit(n) }

// Context ends with the stream.
func (s *Stream) Context() context.Context { return s.ctx }

// alive pushes the read deadline: the peer was heard from.
func (s *Stream) alive() { _ = s.conn.SetReadDeadline(time.Now().Add(s.idle)) }

// WriteJSON sends one message. An error ends the stream.
func (s *Stream) WriteJSON(v any) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(StreamWriteWait))
	if err := s.conn.WriteJSON(v); err != nil {
		s.cancel(err)
		return err
	}
	return nil
}

func (s *Stream) read(o StreamOptions) {
	defer s.wg.Done()
	for {
		_, msg, err := s.conn.ReadMessage()
		if err != nil {
			s.cancel(errPeerLeft)
			return
		}
		s.alive()
		if o.OnMessage == nil {
			continue
		}
		if err := o.OnMessage(s.ctx, msg); err != nil && o.ErrorEvent != nil {
			if s.WriteJSON(o.ErrorEvent(err)) != nil {
				return
			}
		}
	}
}

func (s *Stream) keepAlive() {
	defer s.wg.Done()
	t := time.NewTicker(s.ping)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(StreamWriteWait)); err != nil {
				s.cancel(err)
				return
			}
		}
	}
}

// Close ends the stream: a close frame with code and reason (cut to fit a
// control frame), then the connection, then it waits for the reader and
// the pinger. A reason "" names why the stream's context ended.
func (s *Stream) Close(code int, reason string) {
	if reason == "" {
		reason = s.endReason()
	}
	s.cancel(errors.New(reason))
	_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, truncateReason(reason)), time.Now().Add(StreamWriteWait))
	_ = s.conn.Close() // unblocks the reader
	s.wg.Wait()
}

// endReason says why the stream's context ended, in words for the client.
func (s *Stream) endReason() string {
	cause := context.Cause(s.ctx)
	switch {
	case cause == nil:
		return "stream closed"
	case errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded):
		return "stream ended by the daemon (shutdown or token rotation)"
	}
	return "stream ended: " + cause.Error()
}

// truncateReason fits a close reason in a control frame (125 bytes, 2 for
// the code), without cutting a UTF-8 sequence in half.
func truncateReason(s string) string {
	const maxReason = 123
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut]
}
