package mesh

import (
	"encoding/binary"
	"encoding/json"
	"io"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// The open request: the first bytes a node writes on a trunk stream, for
// the node that holds the computer's session (its home).
//
//	"CUAM"     4 bytes, magic
//	version    1 byte, openVersion
//	kind       1 byte, StreamKind
//	computer, person, person name, role: each 1 byte of length, then
//	           the bytes (text; lengths bounded below)
//
// The home node answers:
//
//	"CUAM"     4 bytes
//	status     1 byte: 0 ok (the stream is the Space's from here, both
//	           ways), 1 refused
//	refused:   2 bytes of length, big-endian, then an api.Error in JSON
//	           (at most maxAnswerErr bytes), and the stream ends.
const (
	openMagic    = "CUAM"
	openVersion  = 1
	maxAnswerErr = 4 << 10
	maxRoleLen   = 16
	// MaxComputerLen bounds a computer's name in an open request (a DNS
	// label is 63).
	MaxComputerLen = 63
)

// StreamKind says what a trunk stream is for.
type StreamKind byte

// The kinds. Numbers are part of the wire between nodes.
const (
	// KindHTTP: a relayed stream of the Space's control session
	// (pooled HTTP).
	KindHTTP StreamKind = 1
	// KindOffer: a stream of its own for a WHEP offer; its grant carries
	// a TURN credential the home node mints (its TURN server is the one
	// its Space reaches).
	KindOffer StreamKind = 2
	// KindData: a data connection of the Space's for one bulk exchange.
	KindData StreamKind = 3
)

func (k StreamKind) valid() bool { return k >= KindHTTP && k <= KindData }

// OpenRequest is what a node asks of a computer's home node: a stream of
// Kind, with a grant of the caller (Person, PersonName, Role), whom the
// asking node authenticated.
type OpenRequest struct {
	Kind       StreamKind
	Computer   string
	Person     string
	PersonName string
	Role       protocol.Role
}

func badOpen(format string, args ...any) error {
	return api.Errorf(api.KindInvalidArgument, "open request: "+format, args...)
}

func (o OpenRequest) check() error {
	switch {
	case !o.Kind.valid():
		return badOpen("unknown kind %d", o.Kind)
	case o.Computer == "" || len(o.Computer) > MaxComputerLen:
		return badOpen("computer: want 1 to %d bytes", MaxComputerLen)
	case o.Person == "" || len(o.Person) > protocol.MaxPersonLen || len(o.PersonName) > protocol.MaxPersonLen:
		return badOpen("person: want 1 to %d bytes", protocol.MaxPersonLen)
	case !o.Role.Valid():
		return badOpen("role %.20q: unknown", string(o.Role))
	}
	return nil
}

// WriteOpen writes o in one Write.
func WriteOpen(w io.Writer, o OpenRequest) error {
	if err := o.check(); err != nil {
		return err
	}
	b := append([]byte(openMagic), openVersion, byte(o.Kind))
	for _, s := range []string{o.Computer, o.Person, o.PersonName, string(o.Role)} {
		b = append(append(b, byte(len(s))), s...)
	}
	if _, err := w.Write(b); err != nil {
		return api.Errorf(api.KindRelay, "write an open request: %w", err)
	}
	return nil
}

// ReadOpen reads an open request from r, and not a byte more.
func ReadOpen(r io.Reader) (OpenRequest, error) {
	var fixed [6]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return OpenRequest{}, badOpen("%v", err)
	}
	if string(fixed[:4]) != openMagic || fixed[4] != openVersion {
		return OpenRequest{}, badOpen("bad magic or version")
	}
	o := OpenRequest{Kind: StreamKind(fixed[5])}
	limits := []int{MaxComputerLen, protocol.MaxPersonLen, protocol.MaxPersonLen, maxRoleLen}
	fields := []*string{&o.Computer, &o.Person, &o.PersonName, (*string)(&o.Role)}
	for i, f := range fields {
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return OpenRequest{}, badOpen("%v", err)
		}
		if int(n[0]) > limits[i] {
			return OpenRequest{}, badOpen("a field of %d bytes, over %d", n[0], limits[i])
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return OpenRequest{}, badOpen("%v", err)
		}
		*f = string(b)
	}
	return o, o.check()
}

// WriteAnswer answers an open request: ok (refused nil), or the refusal.
func WriteAnswer(w io.Writer, refused error) error {
	b := []byte(openMagic + "\x00")
	if refused != nil {
		e := api.AsError(refused)
		j, err := json.Marshal(e)
		if err != nil || len(j) > maxAnswerErr {
			j, _ = json.Marshal(api.Errorf(e.Kind, "the home node refused the stream"))
		}
		b[4] = 1
		b = binary.BigEndian.AppendUint16(b, uint16(len(j)))
		b = append(b, j...)
	}
	if _, err := w.Write(b); err != nil {
		return api.Errorf(api.KindRelay, "write an open answer: %w", err)
	}
	return nil
}

// ReadAnswer reads the home node's answer: nil for ok, its refusal (an
// *api.Error) otherwise, or what went wrong reading it (kind relay).
func ReadAnswer(r io.Reader) error {
	var fixed [5]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return api.Errorf(api.KindRelay, "read the home node's answer: %w", err)
	}
	if string(fixed[:4]) != openMagic || fixed[4] > 1 {
		return api.Errorf(api.KindRelay, "the home node's answer: bad bytes")
	}
	if fixed[4] == 0 {
		return nil
	}
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return api.Errorf(api.KindRelay, "read the home node's answer: %w", err)
	}
	size := int(binary.BigEndian.Uint16(n[:]))
	if size > maxAnswerErr {
		return api.Errorf(api.KindRelay, "the home node's answer: %d bytes, over %d", size, maxAnswerErr)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return api.Errorf(api.KindRelay, "read the home node's answer: %w", err)
	}
	var e api.Error
	if err := json.Unmarshal(b, &e); err != nil || e.Kind == "" {
		return api.Errorf(api.KindRelay, "the home node's answer: not an error")
	}
	return &e
}
