package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// Control frame limits.
const (
	// MaxFrameSize bounds a control frame's payload. Control messages are
	// small and rare; bulk goes over streams and data connections.
	MaxFrameSize = 16 << 10
	// frameHeaderLen is a frame's type byte and its payload length
	// (uint32, big-endian).
	frameHeaderLen = 1 + 4
	// DefaultWriteTimeout bounds each frame a Writer writes when its
	// io.Writer takes deadlines: long enough for a slow link or a VM
	// paused for a moment, short enough that a dead peer does not hold a
	// writer forever (DESIGN §4).
	DefaultWriteTimeout = 30 * time.Second
)

// FrameType is a control frame's first byte. Numbers are part of the wire.
type FrameType byte

// The control frames. Each carries one JSON message (messages.go).
const (
	FrameHello    FrameType = 1 // Space → relay, first
	FrameWelcome  FrameType = 2 // relay → Space, the answer to Hello
	FramePing     FrameType = 3 // either way
	FramePong     FrameType = 4 // either way, the answer to Ping
	FrameGoAway   FrameType = 5 // relay → Space
	FrameOpenData FrameType = 6 // relay → Space
	FrameKick     FrameType = 7 // relay → Space
	FrameClose    FrameType = 8 // either way, last
)

func (t FrameType) String() string {
	switch t {
	case FrameHello:
		return "hello"
	case FrameWelcome:
		return "welcome"
	case FramePing:
		return "ping"
	case FramePong:
		return "pong"
	case FrameGoAway:
		return "go_away"
	case FrameOpenData:
		return "open_data"
	case FrameKick:
		return "kick"
	case FrameClose:
		return "close"
	}
	return fmt.Sprintf("frame_%d", byte(t))
}

// Frame is one control frame: its type and its payload.
type Frame struct {
	Type    FrameType
	Payload []byte
}

// AppendFrame appends f's bytes to b: type, length, payload.
func AppendFrame(b []byte, f Frame) ([]byte, error) {
	if len(f.Payload) > MaxFrameSize {
		return b, closeError(CloseTooLarge, api.KindInvalidArgument, "%s frame: %d bytes, over the %d allowed", f.Type, len(f.Payload), MaxFrameSize)
	}
	b = append(b, byte(f.Type))
	b = binary.BigEndian.AppendUint32(b, uint32(len(f.Payload)))
	return append(b, f.Payload...), nil
}

// Reader reads control frames from a stream. It is not safe for
// concurrent use: one goroutine owns a control stream's reads.
type Reader struct {
	r   io.Reader
	hdr [frameHeaderLen]byte
}

// NewReader reads frames from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// ReadFrame reads the next frame. It answers io.EOF when r ended between
// frames (the peer went away cleanly); a frame cut short, or one over
// MaxFrameSize (refused before its payload is read), is invalid_argument
// with the close code to answer as its reason (CloseCodeFor); a read that
// failed otherwise is kind relay, wrapping the failure.
func (r *Reader) ReadFrame() (Frame, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		if err == io.EOF {
			return Frame{}, io.EOF
		}
		return Frame{}, readError("frame header", err)
	}
	f := Frame{Type: FrameType(r.hdr[0])}
	n := binary.BigEndian.Uint32(r.hdr[1:])
	if n > MaxFrameSize {
		return Frame{}, closeError(CloseTooLarge, api.KindInvalidArgument, "%s frame: %d bytes, over the %d allowed", f.Type, n, MaxFrameSize)
	}
	f.Payload = make([]byte, n)
	if _, err := io.ReadFull(r.r, f.Payload); err != nil {
		return Frame{}, readError(f.Type.String()+" frame", err)
	}
	return f, nil
}

// ReadMessage reads the next frame and decodes its message (Decode).
func (r *Reader) ReadMessage() (Message, error) {
	f, err := r.ReadFrame()
	if err != nil {
		return nil, err
	}
	return Decode(f)
}

func readError(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return closeError(CloseProtocolError, api.KindInvalidArgument, "%s: truncated", what).WithCause(io.ErrUnexpectedEOF)
	}
	return api.Errorf(api.KindRelay, "read %s: %w", what, err)
}

// Writer writes control frames to a stream. Its methods are safe for
// concurrent use (a heartbeat and the session's loop write to the same
// stream); each frame goes out in one Write, whole.
type Writer struct {
	mu       sync.Mutex
	w        io.Writer
	deadline func(time.Time) error
	timeout  time.Duration
	buf      []byte
}

// NewWriter writes frames to w. When w has SetWriteDeadline (a net.Conn,
// a yamux stream) and timeout is positive, each frame must be written
// within timeout, or the write fails with w's timeout error (kind relay):
// no blocking write is unbounded.
func NewWriter(w io.Writer, timeout time.Duration) *Writer {
	wr := &Writer{w: w, timeout: timeout}
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok && timeout > 0 {
		wr.deadline = d.SetWriteDeadline
	}
	return wr
}

// WriteFrame writes f.
func (w *Writer) WriteFrame(f Frame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := AppendFrame(w.buf[:0], f)
	if err != nil {
		return err
	}
	w.buf = b
	if w.deadline != nil {
		if err := w.deadline(time.Now().Add(w.timeout)); err != nil {
			return api.Errorf(api.KindRelay, "write %s frame: set deadline: %w", f.Type, err)
		}
	}
	if _, err := w.w.Write(b); err != nil {
		return api.Errorf(api.KindRelay, "write %s frame: %w", f.Type, err)
	}
	return nil
}

// WriteMessage encodes m (Encode) and writes it.
func (w *Writer) WriteMessage(m Message) error {
	f, err := Encode(m)
	if err != nil {
		return err
	}
	return w.WriteFrame(f)
}
