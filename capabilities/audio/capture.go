package audio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio/internal/pulse"
)

// ErrClosed is Read's answer after Close.
var ErrClosed = api.Errorf(api.KindCancelled, "audio capture: the capture was closed")

// Capture records what the sound server plays, for one reader.
//
// Read is for one goroutine at a time; Close and Dropped may be called
// from any.
type Capture struct {
	log    *slog.Logger
	conn   *pulse.Conn
	stream *pulse.RecordStream
	where  string // "<source> on <server>", for messages

	ready     chan struct{} // a frame is held, or the stream ended; one pending is enough
	closed    chan struct{}
	closeOnce sync.Once
	bg        sync.WaitGroup // the latency refresh
	// blockArrived tells the latency refresh that a block came in, once
	// it asked (latencyDue).
	blockArrived chan struct{}

	mu    sync.Mutex
	q     *queue
	clock clock
	// correction is how long after it was played a sample reaches the
	// server's queue for us: the source's latency (a sample waits that
	// long in the source) less, for a monitor, the sink's (a sink plays a
	// sample that long after its monitor has seen it), so most often
	// negative for a monitor.
	correction time.Duration
	err        error // why the stream ended
	latencyDue bool  // the latency refresh waits for the next block
	loggedDrop time.Time
}

// Open connects to the sound server and starts recording the desktop mix
// (the default sink's monitor, or opts.Source). Audio queues from then on:
// read it with Read, at least as fast as it plays. ctx bounds the set-up
// alone (as does a timeout of its own); the capture runs until Close.
//
// An idle PulseAudio null sink (the sink of a headless guest) renders in
// blocks of up to 2 s, so the first frame may take that long to come;
// after it audio flows in real time.
func Open(ctx context.Context, opts Options) (*Capture, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, openTimeout, errBound)
	defer cancel()
	c, err := open(ctx, opts)
	if err != nil {
		return nil, describe(ctx, err, opts.Source, openTimeout).apiError(false)
	}
	return c, nil
}

func open(ctx context.Context, opts Options) (*Capture, error) {
	conn, server, err := connect(ctx, opts)
	if err != nil {
		return nil, err
	}
	source := opts.Source
	if source == "" {
		if source, err = defaultMonitor(ctx, conn); err != nil {
			conn.Close()
			return nil, atServer(server, err)
		}
	}
	c := &Capture{
		log:          opts.logger().With("source", source, "server", server),
		conn:         conn,
		where:        source + " on " + server,
		ready:        make(chan struct{}, 1),
		blockArrived: make(chan struct{}, 1),
		closed:       make(chan struct{}),
		q:            newQueue(int(framesFor(MaxQueue))),
	}
	stream, err := conn.CreateRecordStream(ctx, pulse.RecordOptions{
		Source:     source,
		Spec:       pulse.SampleSpec{Format: pulse.FormatS16LE, Channels: Channels, Rate: SampleRate},
		ChannelMap: []uint8{pulse.ChannelFrontLeft, pulse.ChannelFrontRight},
		// The server's own queue, for a process that stalls: no more
		// than ours.
		MaxLength:     uint32(bytesFor(MaxQueue)),
		FragSize:      uint32(bytesFor(Fragment)),
		AdjustLatency: true,
		Props:         []pulse.Prop{pulse.StringProp("media.name", "desktop audio"), pulse.StringProp("media.role", "production")},
		Data:          c.onData,
		Event:         c.onEvent,
		End:           c.onEnd,
	})
	if err != nil {
		conn.Close()
		return nil, atServer(server, err)
	}
	c.stream = stream
	if stream.Spec.Format != pulse.FormatS16LE || stream.Spec.Rate != SampleRate || stream.Spec.Channels != Channels {
		conn.Close()
		return nil, atServer(server, fmt.Errorf("the server set up %+v for %s, not s16le %d Hz stereo", stream.Spec, source, SampleRate))
	}
	c.log.Debug("audio capture started", "fragsize", stream.FragSize, "maxlength", stream.MaxLength,
		"source_latency", stream.SourceLatency, "protocol", conn.ProtocolVersion())
	c.bg.Add(1)
	go c.refreshLatency()
	return c, nil
}

// framesFor is how many frames d holds.
func framesFor(d time.Duration) int64 { return int64(d) * SampleRate / int64(time.Second) }

// bytesFor is the size of d of audio on the wire.
func bytesFor(d time.Duration) int64 { return framesFor(d) * bytesPerFrame }

// Read fills frame (FrameLen values: FrameSamples per channel, interleaved
// left, right) with the next 20 ms of audio, waiting for it, and answers
// when its first sample was played, as best known: the arrival of the
// blocks on our socket (the least delayed of the last ~0.6 s, so that
// scheduling jitter does not move it), back-dated by their position in
// the stream, less the latency the server reports for the source, plus,
// for a monitor, the sink's (a sink plays a sample after its monitor has
// seen it, so the time may lie a little in the future). The server's
// figures are asked after the first block and then every 2 s.
//
// Frames follow each other without gaps unless Dropped grew: a reader
// more than MaxQueue behind loses the oldest audio. A server that goes
// away ends the capture: Read answers the frames already held, then an
// error of kind env. After Close it answers ErrClosed.
func (c *Capture) Read(ctx context.Context, frame []int16) (at time.Time, err error) {
	if len(frame) != FrameLen {
		return time.Time{}, api.Errorf(api.KindInvalidArgument, "audio capture: a frame of %d values, want %d", len(frame), FrameLen)
	}
	for {
		select {
		case <-c.closed:
			return time.Time{}, ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return time.Time{}, ctxError(ctx, c.where)
		}
		c.mu.Lock()
		if c.q.frames() >= FrameSamples {
			pos := c.q.take(frame)
			at = c.clock.received(pos).Add(-c.correction)
			c.mu.Unlock()
			return at, nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return time.Time{}, err
		}
		select {
		case <-c.ready:
		case <-c.closed:
		case <-ctx.Done():
		}
	}
}

func ctxError(ctx context.Context, where string) error {
	kind := api.KindCancelled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = api.KindTimeout
	}
	return api.Errorf(kind, "audio capture from %s: waiting for audio: %w", where, ctx.Err())
}

// Dropped is how much audio was dropped because the reader fell more
// than MaxQueue behind.
func (c *Capture) Dropped() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return framesDuration(c.q.dropped)
}

// Close ends the capture and its connection; a Read waiting returns
// ErrClosed.
func (c *Capture) Close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.conn.Close()
		c.bg.Wait()
	})
}

// onData takes a block from the server, on the connection's read loop.
func (c *Capture) onData(p []byte) {
	now := time.Now()
	c.mu.Lock()
	dropped := c.q.write(p)
	c.clock.observe(now, c.q.written)
	full := c.q.frames() >= FrameSamples
	due := c.latencyDue
	c.latencyDue = false
	warn := dropped > 0 && now.Sub(c.loggedDrop) >= dropLogInterval
	if warn {
		c.loggedDrop = now
	}
	total := c.q.dropped
	c.mu.Unlock()
	if full {
		c.wake()
	}
	if due {
		select {
		case c.blockArrived <- struct{}{}:
		default:
		}
	}
	if warn {
		c.log.Warn("audio capture: the reader fell behind; dropping the oldest audio",
			"max_queue", MaxQueue, "dropped_total", framesDuration(total))
	}
}

func (c *Capture) wake() {
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// onEvent takes the stream's notices: a paused or moved stream's positions
// no longer line up with the times measured before.
func (c *Capture) onEvent(ev pulse.StreamEvent) {
	c.mu.Lock()
	c.clock.reset()
	c.mu.Unlock()
	switch {
	case ev.Moved:
		c.log.Info("audio capture: the stream moved", "to", ev.Source)
	case ev.Suspended:
		c.log.Info("audio capture: the source was suspended; no audio until it runs again")
	default:
		c.log.Info("audio capture: the source runs again")
	}
}

// onEnd takes the stream's end: the server went away or ended the stream
// (or Close closed the connection, which Read answers first).
func (c *Capture) onEnd(err error) {
	c.mu.Lock()
	c.err = api.Errorf(api.KindEnv, "audio capture from %s ended: %w", c.where, err)
	c.mu.Unlock()
	c.wake()
	if !errors.Is(err, pulse.ErrClosed) {
		c.log.Warn("audio capture ended", "err", err)
	}
}

// refreshLatency asks the server for the stream's latency after the first
// block and then every latencyRefresh, until the capture ends. It asks
// right after a block arrives: a sink's latency is a sawtooth, full just
// after it renders (which is when its monitor sends us the block) and
// emptying until the next render, and the full value is the one the
// block's samples wait out. Until the first answer the correction is 0.
func (c *Capture) refreshLatency() {
	defer c.bg.Done()
	wait := time.NewTimer(0)
	defer wait.Stop()
	var recent [latencyReadings]time.Duration // newest first
	n := 0
	for {
		select {
		case <-wait.C:
		case <-c.closed:
			return
		case <-c.conn.Done():
			return
		}
		c.mu.Lock()
		c.latencyDue = true
		c.mu.Unlock()
		select {
		case <-c.blockArrived:
		case <-c.closed:
			return
		case <-c.conn.Done():
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), latencyRefresh)
		l, err := c.stream.Latency(ctx)
		cancel()
		switch {
		case err == nil:
			// The largest of the last few readings: an answer that left
			// the server late reads the sawtooth lower, never higher.
			copy(recent[1:], recent[:])
			recent[0] = l.Monitor - l.Source
			n = min(n+1, len(recent))
			c.mu.Lock()
			c.correction = -slices.Max(recent[:n])
			c.mu.Unlock()
		case c.conn.Err() == nil:
			c.log.Debug("audio capture: latency query failed", "err", err)
		}
		wait.Reset(latencyRefresh)
	}
}
