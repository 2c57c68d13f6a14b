package mesh

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trycua/cua-spacesd/api"
)

// A trunk's messages, on relay.trunk.<to>.<from>:
//
//	type    1 byte: msgHello, msgData or msgReset, | fromAcceptor when the trunk's
//	        acceptor sent it (so a trunk is known by its peer, its id
//	        and which end made it)
//	trunk   8 bytes, big-endian: the trunk's id, random, its maker's
//	seq     8 bytes, big-endian: data 1, 2, ... in each direction; hello
//	        and reset 0
//	payload the bytes (data only)
//
// A hello (a request, from the maker) makes the trunk's end on the peer,
// which answers it. NATS keeps one publisher's messages on one subject in order, across
// routes too; it may drop some (a slow consumer). A gap in seq resets the
// trunk: its streams fail, and the next use makes a new one.
const (
	msgData      = 1
	msgReset     = 2
	msgHello     = 3
	fromAcceptor = 0x80
	msgHeaderLen = 1 + 8 + 8
	// maxQueued bounds the bytes a trunk holds that yamux has not read
	// yet. yamux reads at once and bounds each stream by its window, so
	// more means a broken peer: the trunk resets.
	maxQueued = 64 << 20
	// maxChunk bounds one message's payload (NATS's default max_payload is
	// 1 MiB; a yamux frame is at most a stream window, 256 KiB).
	maxChunk = 256 << 10
)

// errLost ends a trunk that missed a message.
var errLost = api.Errorf(api.KindRelay, "relay trunk: a message was lost; the trunk resets")

// pipe is one trunk's byte stream: its writes are messages to the peer,
// its reads the peer's messages, in order. It is a net.Conn for yamux;
// deadlines are not supported (yamux keeps its own timers).
type pipe struct {
	nc   *nats.Conn
	out  string // the peer's subject
	key  pipeKey
	flag byte // fromAcceptor on the acceptor's end

	wmu  sync.Mutex
	wseq uint64
	wbuf []byte
	held []byte // a data frame's header, sent with its body (Write)
	// dropNext skips the next message's publish (a test's lost message:
	// NATS drops messages only under load it is hard to cause on purpose).
	dropNext bool

	mu     sync.Mutex
	queue  [][]byte
	queued int
	rseq   uint64
	err    error
	notify chan struct{} // cap 1: something was queued, or the pipe ended
	done   chan struct{}
	// onEnd runs once when the pipe ends (the mesh forgets it).
	onEnd func()
}

// pipeKey names a trunk on one node: the peer, the trunk's id, and
// whether this node made it.
type pipeKey struct {
	peer  string
	id    uint64
	maker bool
}

func newPipe(nc *nats.Conn, out string, key pipeKey, onEnd func()) *pipe {
	p := &pipe{nc: nc, out: out, key: key, notify: make(chan struct{}, 1), done: make(chan struct{}), onEnd: onEnd}
	if !key.maker {
		p.flag = fromAcceptor
	}
	return p
}

// deliver queues a data message of the peer's. It never blocks: it runs
// on the mesh's subscription.
func (p *pipe) deliver(seq uint64, data []byte) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	if seq != p.rseq+1 || p.queued+len(data) > maxQueued {
		p.mu.Unlock()
		p.end(errLost, true)
		return
	}
	p.rseq = seq
	if len(data) > 0 {
		p.queue = append(p.queue, data)
		p.queued += len(data)
	}
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// Read reads the peer's bytes in order; after the pipe ended, its error.
func (p *pipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			n := copy(b, p.queue[0])
			if n == len(p.queue[0]) {
				p.queue[0] = nil
				p.queue = p.queue[1:]
			} else {
				p.queue[0] = p.queue[0][n:]
			}
			p.queued -= n
			p.mu.Unlock()
			return n, nil
		}
		err := p.err
		p.mu.Unlock()
		if err != nil {
			return 0, err
		}
		select {
		case <-p.notify:
		case <-p.done:
		}
	}
}

// Write sends b to the peer, in messages of at most maxChunk bytes.
//
// yamux writes a data frame's 12-byte header and its body in two Writes:
// the header is held and sent in the body's message, one message a frame
// instead of two (the bytes keep their order whatever comes next).
func (p *pipe) Write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if len(p.held) == 0 && isDataHeader(b) {
		p.held = append(p.held, b...)
		return len(b), nil
	}
	n := 0
	for n < len(b) {
		select {
		case <-p.done:
			return n, p.endErr()
		default:
		}
		chunk := b[n:min(len(b), n+maxChunk)]
		p.wseq++
		if p.dropNext {
			p.dropNext = false
		} else {
			p.wbuf = appendMsg(p.wbuf[:0], msgData|p.flag, p.key.id, p.wseq, p.held)
			p.wbuf = append(p.wbuf, chunk...)
			// Publish copies the message into the connection's buffer.
			if err := p.nc.Publish(p.out, p.wbuf); err != nil {
				p.end(api.Errorf(api.KindRelay, "relay trunk to %s: %w", p.key.peer, err), false)
				return n, p.endErr()
			}
		}
		p.held = p.held[:0]
		n += len(chunk)
	}
	return n, nil
}

// yamuxHeaderLen is a yamux frame header's size.
const yamuxHeaderLen = 12

// isDataHeader reports whether b is a yamux data frame's header alone, of
// a frame with a body (version 0, type 0, a length).
func isDataHeader(b []byte) bool {
	return len(b) == yamuxHeaderLen && b[0] == 0 && b[1] == 0 && binary.BigEndian.Uint32(b[8:]) > 0
}

func (p *pipe) endErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// end ends the pipe once with err, at once (what is queued is dropped:
// a reset trunk's bytes are worthless), telling the peer when reset is set.
func (p *pipe) end(err error, reset bool) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	p.err = err
	p.queue, p.queued = nil, 0
	p.mu.Unlock()
	close(p.done)
	if reset {
		_ = p.nc.Publish(p.out, appendMsg(nil, msgReset|p.flag, p.key.id, 0, nil))
	}
	if p.onEnd != nil {
		p.onEnd()
	}
}

// Close ends the pipe and tells the peer (yamux closes it when its
// session ends).
func (p *pipe) Close() error {
	p.end(net.ErrClosed, true)
	return nil
}

func appendMsg(b []byte, typ byte, id, seq uint64, payload []byte) []byte {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint64(b, id)
	b = binary.BigEndian.AppendUint64(b, seq)
	return append(b, payload...)
}

// parseMsg splits a trunk message; ok is false for one too short or of an
// unknown type.
func parseMsg(b []byte) (typ byte, acceptor bool, id, seq uint64, payload []byte, ok bool) {
	if len(b) < msgHeaderLen {
		return 0, false, 0, 0, nil, false
	}
	typ, acceptor = b[0]&^fromAcceptor, b[0]&fromAcceptor != 0
	if typ != msgData && typ != msgReset && typ != msgHello {
		return 0, false, 0, 0, nil, false
	}
	return typ, acceptor, binary.BigEndian.Uint64(b[1:9]), binary.BigEndian.Uint64(b[9:17]), b[msgHeaderLen:], true
}

type meshAddr string

func (a meshAddr) Network() string { return "nats" }
func (a meshAddr) String() string  { return string(a) }

func (p *pipe) LocalAddr() net.Addr              { return meshAddr("relay-trunk") }
func (p *pipe) RemoteAddr() net.Addr             { return meshAddr(p.key.peer) }
func (p *pipe) SetDeadline(time.Time) error      { return nil }
func (p *pipe) SetReadDeadline(time.Time) error  { return nil }
func (p *pipe) SetWriteDeadline(time.Time) error { return nil }

var _ net.Conn = (*pipe)(nil)
