package client

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
)

// streamWriteWait bounds every write of a stream to the daemon.
const streamWriteWait = 10 * time.Second

// Stream is an open WebSocket stream from the daemon whose messages are Ts,
// with the keep-alive of the wire contract on the client's side: a read
// limit of api.StreamMaxMessageBytes, a ping every api.StreamPingInterval,
// and a daemon silent for api.StreamIdleTimeout (no message, no ping, no
// pong) ends the stream with an error instead of a read that waits for ever.
// One goroutine reads with Next; Send may be called from another.
type Stream[T any] struct {
	conn    *websocket.Conn
	ka      keepAlive
	writeMu sync.Mutex
	stop    chan struct{}
	once    sync.Once
}

// ProcessStream is the output stream of one process (StreamProcess).
type ProcessStream = Stream[api.StreamEvent]

// FileWatch is an open watch of a directory (Watch).
type FileWatch = Stream[api.WatchEvent]

// openStream dials path and starts the stream's keep-alive.
func openStream[T any](ctx context.Context, c *Client, path string, q url.Values) (*Stream[T], error) {
	conn, err := c.DialWebSocket(ctx, path, q)
	if err != nil {
		return nil, err
	}
	s := &Stream[T]{conn: conn, ka: c.keepAlive, stop: make(chan struct{})}
	conn.SetReadLimit(api.StreamMaxMessageBytes)
	s.alive()
	conn.SetPongHandler(func(string) error { s.alive(); return nil })
	conn.SetPingHandler(func(data string) error {
		s.alive()
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(streamWriteWait))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	go s.ping()
	return s, nil
}

func (s *Stream[T]) alive() { _ = s.conn.SetReadDeadline(time.Now().Add(s.ka.idle)) }

func (s *Stream[T]) ping() {
	t := time.NewTicker(s.ka.ping)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(streamWriteWait)) != nil {
				return
			}
		}
	}
}

// Next returns the next message. When the daemon ends the stream, the
// error says why (the close frame's reason).
func (s *Stream[T]) Next() (*T, error) {
	var v T
	if err := s.conn.ReadJSON(&v); err != nil {
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return nil, api.Errorf(api.KindStream, "stream closed by the daemon: %s", closeText(ce)).WithCause(err)
		}
		return nil, api.Errorf(api.KindStream, "stream: %w", err)
	}
	s.alive()
	return &v, nil
}

// Send sends one message (stdin, a resize or a signal on a process stream).
func (s *Stream[T]) Send(v any) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(streamWriteWait))
	if err := s.conn.WriteJSON(v); err != nil {
		return api.Errorf(api.KindStream, "stream: %w", err)
	}
	return nil
}

// Close ends the stream; what it streamed from (a process, a watch) goes on
// or ends as that route says.
func (s *Stream[T]) Close() error {
	s.once.Do(func() { close(s.stop) })
	return s.conn.Close()
}

func closeText(ce *websocket.CloseError) string {
	if ce.Text != "" {
		return ce.Text
	}
	return "code " + strconv.Itoa(ce.Code)
}
