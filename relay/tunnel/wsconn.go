package tunnel

import (
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// closeWriteTimeout bounds the write of the close frame at Close: a peer
// that stopped reading must not hold Close.
const closeWriteTimeout = time.Second

// WSConn is a WebSocket connection as a byte stream: each Write is one
// binary message, and Read reads across message boundaries. It is what a
// yamux session (or one HTTP exchange, on a data connection) runs over.
type WSConn struct {
	ws *websocket.Conn

	readMu sync.Mutex
	cur    io.Reader // the message being read, nil between messages

	writeMu sync.Mutex

	closeOnce sync.Once
	closeCode int
	closeText string

	// bulk: yield the processor after each message (NewBulkWSConn).
	bulk bool
}

var _ net.Conn = (*WSConn)(nil)

// NewWSConn wraps ws. The caller gives up ws: read and write it through
// the WSConn only.
func NewWSConn(ws *websocket.Conn) *WSConn {
	return &WSConn{ws: ws, closeCode: websocket.CloseNormalClosure}
}

// NewBulkWSConn wraps the WebSocket of a bulk transfer (a data
// connection). It yields the processor after each message it writes: a
// transfer whose writes never block (a loopback or fast link with room in
// its buffers) would otherwise hold a processor until Go preempts it
// (10 ms), and each goroutine of an interactive stream (a keystroke's
// echo) would wait that long, hop after hop.
func NewBulkWSConn(ws *websocket.Conn) *WSConn {
	c := NewWSConn(ws)
	c.bulk = true
	return c
}

// WebSocket is the wrapped connection (for its close frame's code, say).
func (c *WSConn) WebSocket() *websocket.Conn { return c.ws }

// Read reads the bytes of the current binary message, then of the next.
// A text message is a protocol error: nothing of this protocol is text.
func (c *WSConn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if c.cur == nil {
			typ, r, err := c.ws.NextReader()
			if err != nil {
				return 0, readErr(err)
			}
			if typ != websocket.BinaryMessage {
				return 0, errors.New("tunnel: a text message on a binary tunnel")
			}
			c.cur = r
		}
		n, err := c.cur.Read(p)
		if errors.Is(err, io.EOF) {
			c.cur = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// readErr turns the peer's normal close into io.EOF, so that a reader sees
// the end of a stream, not an error.
func readErr(err error) error {
	if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
		return io.EOF
	}
	return err
}

// Write sends p as one binary message.
func (c *WSConn) Write(p []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	if c.bulk {
		runtime.Gosched()
	}
	return len(p), nil
}

// CloseWith sets the code and text of the close frame Close sends (a
// protocol.CloseCode, say); the default is a normal closure.
func (c *WSConn) CloseWith(code int, text string) error {
	c.writeMu.Lock()
	c.closeCode, c.closeText = code, text
	c.writeMu.Unlock()
	return c.Close()
}

// Close sends a close frame (best effort, bounded) and closes the socket.
func (c *WSConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.writeMu.Lock()
		msg := websocket.FormatCloseMessage(c.closeCode, c.closeText)
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeWriteTimeout))
		c.writeMu.Unlock()
		err = c.ws.Close()
	})
	return err
}

func (c *WSConn) LocalAddr() net.Addr  { return c.ws.LocalAddr() }
func (c *WSConn) RemoteAddr() net.Addr { return c.ws.RemoteAddr() }

func (c *WSConn) SetDeadline(t time.Time) error {
	return errors.Join(c.ws.SetReadDeadline(t), c.ws.SetWriteDeadline(t))
}
func (c *WSConn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *WSConn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }
