// Package pulse speaks the part of PulseAudio's native protocol that the
// desktop audio capture needs, in Go alone (the daemon is a static binary;
// libpulse would need cgo): connect and authenticate with the cookie, name
// the client, ask the server for its default sink, record from a source
// (a sink's monitor) with a small fragment size, read the blocks of audio
// it sends, and ask the stream's latency. PipeWire's pipewire-pulse speaks
// the same protocol.
//
// No shared memory is offered, so every block arrives inline on the
// socket, and the protocol version is held at 32 (PulseAudio 12, 2018; a
// server that cannot speak version 22, PulseAudio 1.0, is refused), so
// that each request and reply has one layout here.
package pulse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// The commands this package sends or handles (PA_COMMAND_*).
const (
	cmdError                 = 0
	cmdReply                 = 2
	cmdCreateRecordStream    = 5
	cmdAuth                  = 8
	cmdSetClientName         = 9
	cmdLookupSource          = 11
	cmdGetServerInfo         = 20
	cmdGetRecordLatency      = 57
	cmdRecordStreamKilled    = 65
	cmdRecordStreamSuspended = 77
	cmdRecordStreamMoved     = 79
)

func commandName(cmd uint32) string {
	switch cmd {
	case cmdCreateRecordStream:
		return "CREATE_RECORD_STREAM"
	case cmdAuth:
		return "AUTH"
	case cmdSetClientName:
		return "SET_CLIENT_NAME"
	case cmdLookupSource:
		return "LOOKUP_SOURCE"
	case cmdGetServerInfo:
		return "GET_SERVER_INFO"
	case cmdGetRecordLatency:
		return "GET_RECORD_LATENCY"
	}
	return fmt.Sprintf("command %d", cmd)
}

const (
	// Version is the protocol version this client speaks.
	Version = 32
	// minVersion is the oldest server version whose layouts this package
	// writes and reads (the format list of a record stream came in 22).
	minVersion = 22
	// versionMask keeps the version of an AUTH reply; the high bits say
	// whether shared memory is on, which we never offer.
	versionMask = 0x0000FFFF
	// CookieSize is the size of the authentication cookie.
	CookieSize = 256
	// noIndex is PA_INVALID_INDEX, "none" in an index field.
	noIndex = 0xFFFFFFFF
	// readBufferSize is the read loop's buffer: a whole block of audio
	// and its descriptor are then most often one read system call.
	readBufferSize = 64 << 10
)

// Config adjusts Dial.
type Config struct {
	// Cookie is the authentication cookie (CookieSize bytes; nil sends
	// zeros). A server that finds the peer is its own user lets it in
	// without one; PipeWire ignores it.
	Cookie []byte
	// Props name the client to the server (application.name, ...).
	Props []Prop
}

// Conn is an authenticated connection to a sound server. Its requests may
// be made from any goroutine; one goroutine of its own reads the socket,
// answers replies to their requests and hands blocks of audio to their
// streams.
type Conn struct {
	nc      net.Conn
	version uint32

	wmu   sync.Mutex // one packet written at a time
	creds []byte     // sent with the next packet (the AUTH), then nil

	mu      sync.Mutex
	nextTag uint32
	pending map[uint32]*call
	streams map[uint32]*RecordStream
	err     error // why the connection ended; set once

	done chan struct{} // closed when the read loop has ended
}

// call is a request waiting for its reply.
type call struct {
	cmd uint32
	// parse reads the reply; it runs on the read loop, so that what it
	// registers (a stream) is in place before the next packet is read.
	parse  func(*tagReader) error
	result chan error // 1-buffered
}

// Dial connects to the server at addr and authenticates. ctx bounds the
// whole handshake.
func Dial(ctx context.Context, addr Address, cfg Config) (*Conn, error) {
	if cfg.Cookie != nil && len(cfg.Cookie) != CookieSize {
		return nil, fmt.Errorf("a cookie of %d bytes (want %d)", len(cfg.Cookie), CookieSize)
	}
	for _, p := range cfg.Props {
		if err := checkString("property", p.Key); err != nil {
			return nil, err
		}
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, addr.Network, addr.Addr)
	if err != nil {
		return nil, err
	}
	c := &Conn{
		nc:      nc,
		pending: map[uint32]*call{},
		streams: map[uint32]*RecordStream{},
		done:    make(chan struct{}),
	}
	if _, ok := nc.(*net.UnixConn); ok {
		c.creds = credentials()
	}
	go c.readLoop()
	if err := c.handshake(ctx, cfg); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Conn) handshake(ctx context.Context, cfg Config) error {
	cookie := cfg.Cookie
	if cookie == nil {
		cookie = make([]byte, CookieSize)
	}
	var server uint32
	err := c.request(ctx, cmdAuth, func(w *tagWriter) {
		w.u32(Version)
		w.arbitrary(cookie)
	}, func(r *tagReader) (err error) {
		server, err = parseU32Reply(r, "AUTH reply")
		server &= versionMask
		return err
	})
	if err != nil {
		return err
	}
	if server < minVersion {
		return fmt.Errorf("it speaks protocol version %d, and %d (PulseAudio 1.0) or later is needed: %w", server, minVersion, CodeVersion)
	}
	c.version = min(server, Version)
	return c.request(ctx, cmdSetClientName, func(w *tagWriter) {
		w.proplist(cfg.Props)
	}, func(r *tagReader) error {
		_, err := parseU32Reply(r, "SET_CLIENT_NAME reply") // our client index
		return err
	})
}

// parseU32Reply reads a reply of one u32: AUTH's version, SET_CLIENT_NAME's
// and LOOKUP_SOURCE's index.
func parseU32Reply(r *tagReader, what string) (uint32, error) {
	v := r.u32()
	return v, r.done(what)
}

// ProtocolVersion is the version both sides speak.
func (c *Conn) ProtocolVersion() uint32 { return c.version }

// Done is closed once the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended: ErrClosed after Close, else what broke
// it (the server went away). It is nil while the connection lives.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection and its streams (their End runs with
// ErrClosed) and waits for the read loop to stop.
func (c *Conn) Close() {
	c.fail(ErrClosed)
	<-c.done
}

// fail ends the connection for err, unless it has ended already.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	_ = c.nc.Close()
}

// request sends a command and waits for its reply, which parse reads
// (parse may be nil when the reply carries nothing wanted).
func (c *Conn) request(ctx context.Context, cmd uint32, args func(*tagWriter), parse func(*tagReader) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", commandName(cmd), err)
	}
	cl := &call{cmd: cmd, parse: parse, result: make(chan error, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	tag := c.nextTag
	c.nextTag++
	if c.nextTag == controlChannel { // that tag marks what the server sends unasked
		c.nextTag = 0
	}
	c.pending[tag] = cl
	c.mu.Unlock()

	w := tagWriter{b: make([]byte, 0, 128)}
	w.u32(cmd)
	w.u32(tag)
	if args != nil {
		args(&w)
	}
	if err := c.write(ctx, appendCommand(nil, w.b)); err != nil {
		c.forget(tag)
		return fmt.Errorf("%s: %w", commandName(cmd), err)
	}
	select {
	case err := <-cl.result:
		return err
	case <-ctx.Done():
		c.forget(tag)
		return fmt.Errorf("%s: no answer from the sound server: %w", commandName(cmd), ctx.Err())
	}
}

func (c *Conn) forget(tag uint32) {
	c.mu.Lock()
	delete(c.pending, tag)
	c.mu.Unlock()
}

// write sends one packet whole, within ctx's deadline. A write that fails
// may have sent part of the packet, after which nothing the server reads
// makes sense: it ends the connection.
func (c *Conn) write(ctx context.Context, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	deadline, _ := ctx.Deadline()
	_ = c.nc.SetWriteDeadline(deadline)
	if uc, ok := c.nc.(*net.UnixConn); ok && c.creds != nil {
		// The credentials go with the first byte; the rest of the
		// packet, if the kernel took only part of it, follows plainly.
		n, _, err := uc.WriteMsgUnix(p, c.creds, nil)
		c.creds = nil
		if err != nil {
			c.fail(fmt.Errorf("write to the sound server: %w", err))
			return c.Err()
		}
		p = p[n:]
	}
	if _, err := c.nc.Write(p); err != nil {
		c.fail(fmt.Errorf("write to the sound server: %w", err))
		return c.Err()
	}
	return nil
}

// readLoop reads every packet until the connection ends, then ends what
// waits on it: pending requests and streams.
func (c *Conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	var buf []byte
	var err error
	for {
		var p packet
		p, buf, err = readPacket(br, buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the sound server closed the connection")
			} else {
				err = fmt.Errorf("read from the sound server: %w", err)
			}
			break
		}
		if p.channel == controlChannel {
			err = c.dispatch(p.payload)
		} else {
			err = c.deliver(p)
		}
		if err != nil {
			break
		}
	}
	c.fail(err) // keeps an earlier reason: ErrClosed, a failed write
	c.mu.Lock()
	err = c.err
	pending, streams := c.pending, c.streams
	c.pending, c.streams = map[uint32]*call{}, map[uint32]*RecordStream{}
	c.mu.Unlock()
	for _, cl := range pending {
		cl.result <- err
	}
	for _, s := range streams {
		s.end(err)
	}
	close(c.done)
}

// deliver hands a block of audio to its stream.
func (c *Conn) deliver(p packet) error {
	if p.flags&flagSHMMask != 0 {
		return fmt.Errorf("protocol error: a shared-memory block (flags %#x), which this client never offered", p.flags)
	}
	c.mu.Lock()
	s := c.streams[p.channel]
	c.mu.Unlock()
	if s != nil && s.data != nil {
		s.data(p.payload)
	}
	return nil
}

// dispatch handles a command packet: a reply, an error, or a notice the
// server sends unasked. Only a packet without a readable header ends the
// connection; a reply that does not parse fails its request alone.
func (c *Conn) dispatch(payload []byte) error {
	r := tagReader{b: payload}
	cmd, tag := r.u32(), r.u32()
	if err := r.done("command header"); err != nil {
		return fmt.Errorf("protocol error: %w", err)
	}
	if tag == controlChannel {
		c.notice(cmd, &r)
		return nil
	}
	c.mu.Lock()
	cl := c.pending[tag]
	delete(c.pending, tag)
	c.mu.Unlock()
	if cl == nil {
		return nil // a request whose caller gave up
	}
	switch cmd {
	case cmdReply:
		var err error
		if cl.parse != nil {
			err = cl.parse(&r)
		}
		cl.result <- err
	case cmdError:
		code := ErrorCode(r.u32())
		if err := r.done("ERROR"); err != nil {
			cl.result <- err
		} else {
			cl.result <- &ServerError{Command: cl.cmd, Code: code}
		}
	default:
		cl.result <- fmt.Errorf("%s: the sound server answered with command %d", commandName(cl.cmd), cmd)
	}
	return nil
}

// notice handles what the server sends unasked about our record streams;
// everything else (events of playback streams, subscriptions) is ignored.
func (c *Conn) notice(cmd uint32, r *tagReader) {
	ev, ok := parseNotice(cmd, r)
	if !ok {
		return
	}
	c.mu.Lock()
	s := c.streams[ev.channel]
	if s != nil && cmd == cmdRecordStreamKilled {
		delete(c.streams, ev.channel)
	}
	c.mu.Unlock()
	switch {
	case s == nil:
	case cmd == cmdRecordStreamKilled:
		s.end(ErrStreamKilled)
	case s.event != nil:
		s.event(ev.StreamEvent)
	}
}

// notice is a parsed notice about a record stream.
type notice struct {
	channel uint32
	StreamEvent
}

// parseNotice reads a notice of cmd; ok is false for a notice this package
// does not handle or cannot read.
func parseNotice(cmd uint32, r *tagReader) (n notice, ok bool) {
	switch cmd {
	case cmdRecordStreamKilled:
		n.channel = r.u32()
	case cmdRecordStreamSuspended:
		n.channel = r.u32()
		n.Suspended = r.boolean()
	case cmdRecordStreamMoved:
		n.channel = r.u32()
		n.Moved = true
		r.u32() // the new source's index
		n.Source = r.string()
		n.Suspended = r.boolean()
		r.u32() // maxlength
		r.u32() // fragsize
		n.SourceLatency = r.usec()
	default:
		return notice{}, false
	}
	if r.err != nil {
		return notice{}, false
	}
	return n, true
}
