package protocol

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// The stream header: the first bytes of every stream the relay opens to a
// Space (a yamux stream of the control session, or a data connection).
//
//	"CUAR"          4 bytes, magic
//	version         1 byte, the session's protocol version
//	kind            1 byte, StreamKind
//	grant length    2 bytes, big-endian, 1 to MaxGrantSize
//	grant           the signed grant (SignGrant)
//
// What follows belongs to the kind (for StreamHTTP, HTTP/1.1 requests).
const (
	headerMagic    = "CUAR"
	headerFixedLen = 4 + 1 + 1 + 2
	// MaxHeaderSize bounds a stream header: ReadHeader reads no more.
	MaxHeaderSize = headerFixedLen + MaxGrantSize
	// HeaderTimeout is how long a Space waits for a stream's header
	// before it closes the stream: a stream that says nothing holds
	// nothing.
	HeaderTimeout = 10 * time.Second
)

// StreamKind says what a relayed stream carries after its header.
type StreamKind byte

// The stream kinds. Numbers are part of the wire.
const (
	// StreamHTTP: the daemon serves its whole HTTP handler on the stream
	// (HTTP/1.1, keep-alive; WebSocket upgrades included), as the
	// grant's person.
	StreamHTTP StreamKind = 1
)

// Valid reports whether k is a kind this package knows.
func (k StreamKind) Valid() bool { return k == StreamHTTP }

func (k StreamKind) String() string {
	if k == StreamHTTP {
		return "http"
	}
	return fmt.Sprintf("kind_%d", byte(k))
}

// Header is a relayed stream's header.
type Header struct {
	// Version is the session's protocol version (Welcome.Version); zero
	// means Version when writing.
	Version int
	Kind    StreamKind
	// Grant is the signed grant, checked with VerifyGrant by the Space.
	Grant []byte
}

// AppendHeader appends h's bytes to b.
func AppendHeader(b []byte, h Header) ([]byte, error) {
	if h.Version == 0 {
		h.Version = Version
	}
	if h.Version < MinVersion || h.Version > Version {
		return b, closeError(CloseUnsupportedVersion, api.KindInvalidArgument, "stream header: version %d, this package speaks %d to %d", h.Version, MinVersion, Version)
	}
	if !h.Kind.Valid() {
		return b, closeError(CloseProtocolError, api.KindInvalidArgument, "stream header: unknown kind %s", h.Kind)
	}
	if len(h.Grant) == 0 {
		return b, closeError(CloseProtocolError, api.KindInvalidArgument, "stream header: no grant")
	}
	if len(h.Grant) > MaxGrantSize {
		return b, closeError(CloseTooLarge, api.KindInvalidArgument, "stream header: a grant of %d bytes, over the %d allowed", len(h.Grant), MaxGrantSize)
	}
	b = append(b, headerMagic...)
	b = append(b, byte(h.Version), byte(h.Kind))
	b = binary.BigEndian.AppendUint16(b, uint16(len(h.Grant)))
	return append(b, h.Grant...), nil
}

// WriteHeader writes h to w in one Write.
func WriteHeader(w io.Writer, h Header) error {
	b, err := AppendHeader(make([]byte, 0, headerFixedLen+len(h.Grant)), h)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return api.Errorf(api.KindRelay, "write stream header: %w", err)
	}
	return nil
}

// ReadHeader reads a stream header from r, and not a byte more: the rest
// of the stream is its kind's. Bad bytes are invalid_argument, with the
// close code to answer as the reason (CloseCodeFor); it does not check the
// grant (VerifyGrant does). The caller bounds the wait (HeaderTimeout).
func ReadHeader(r io.Reader) (Header, error) {
	var fixed [headerFixedLen]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return Header{}, readError("stream header", err)
	}
	if string(fixed[:4]) != headerMagic {
		return Header{}, closeError(CloseProtocolError, api.KindInvalidArgument, "stream header: bad magic %q, want %q", fixed[:4], headerMagic)
	}
	h := Header{Version: int(fixed[4]), Kind: StreamKind(fixed[5])}
	if h.Version < MinVersion || h.Version > Version {
		return Header{}, closeError(CloseUnsupportedVersion, api.KindInvalidArgument, "stream header: version %d, this Space speaks %d to %d", h.Version, MinVersion, Version)
	}
	if !h.Kind.Valid() {
		return Header{}, closeError(CloseProtocolError, api.KindInvalidArgument, "stream header: unknown kind %s", h.Kind)
	}
	n := int(binary.BigEndian.Uint16(fixed[6:]))
	if n == 0 {
		return Header{}, closeError(CloseProtocolError, api.KindInvalidArgument, "stream header: no grant")
	}
	if n > MaxGrantSize {
		return Header{}, closeError(CloseTooLarge, api.KindInvalidArgument, "stream header: a grant of %d bytes, over the %d allowed", n, MaxGrantSize)
	}
	h.Grant = make([]byte, n)
	if _, err := io.ReadFull(r, h.Grant); err != nil {
		return Header{}, readError("stream header grant", err)
	}
	return h, nil
}
