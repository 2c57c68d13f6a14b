package pulse

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Every packet on the connection starts with a descriptor of five big-endian
// uint32: the payload's length, the channel (controlChannel for a command,
// else the stream a block of audio belongs to), a 64-bit offset and flags.
const (
	descriptorSize = 20
	controlChannel = 0xFFFFFFFF
	// maxPayload bounds what one packet may make us allocate. The server
	// sends audio in blocks of at most its tile size (64 KiB) and the
	// replies this package asks for are small; libpulse allows 16 MiB,
	// far more than anything here needs.
	maxPayload = 1 << 20
	// flagSHMMask marks a block passed through shared memory, which this
	// client never offers (the auth request says so): such a packet
	// carries a reference, not audio, and is a protocol error here.
	flagSHMMask = 0xFF000000
)

// packet is one packet read from the connection.
type packet struct {
	channel uint32
	offset  uint64
	flags   uint32
	payload []byte
}

// readPacket reads one packet into buf (grown as needed) and answers it
// with the buffer to reuse for the next; the payload aliases that buffer.
func readPacket(r io.Reader, buf []byte) (packet, []byte, error) {
	var d [descriptorSize]byte
	if _, err := io.ReadFull(r, d[:]); err != nil {
		return packet{}, buf, err
	}
	n := binary.BigEndian.Uint32(d[0:])
	p := packet{
		channel: binary.BigEndian.Uint32(d[4:]),
		offset:  binary.BigEndian.Uint64(d[8:]),
		flags:   binary.BigEndian.Uint32(d[16:]),
	}
	if n > maxPayload {
		return packet{}, buf, fmt.Errorf("a packet of %d bytes (at most %d)", n, maxPayload)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	p.payload = buf[:n]
	if _, err := io.ReadFull(r, p.payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return packet{}, buf, err
	}
	return p, buf, nil
}

// appendCommand appends a command packet: its descriptor, then body.
func appendCommand(dst, body []byte) []byte {
	var d [descriptorSize]byte
	binary.BigEndian.PutUint32(d[0:], uint32(len(body)))
	binary.BigEndian.PutUint32(d[4:], controlChannel)
	dst = append(dst, d[:]...)
	return append(dst, body...)
}
