package rtc

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/scale"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/yuv"
)

// MinKeyframeInterval rate-limits forced keyframes: PLIs and FIRs of many
// viewers, or a viewer that asks in a loop, cannot turn the stream into
// keyframes only. A request inside the interval is served at its end,
// never dropped.
const MinKeyframeInterval = 100 * time.Millisecond

// paceSlack is how much earlier than 1/max_fps after the last frame a
// pipeline still encodes: the capture runs at the highest rate of its
// pipelines, and a frame a little early for this one is not held back by
// a timer for the jitter of the capture's own pacing.
const paceSlack = 8 // a 1/8 of the interval

// Stats are a pipeline's counters, for the benchmarks and metrics.
type Stats struct {
	Encoded   int64 // frames encoded and sent
	Keyframes int64
	Bytes     int64
	// LastKeyframeBytes and LastKeyframeTook are the size and encode time
	// of the latest keyframe.
	LastKeyframeBytes int
	LastKeyframeTook  time.Duration
	EncodeTime        time.Duration // total
	BitrateKbps       int
	Width, Height     int
}

// pipeline is the frames of one target at one size, shared by every
// viewer that asked for that size: the capture's changes, scaled when the
// size is smaller than the target's, in I420 (changed rows only) → VP8 →
// the one track every such viewer's peer connection sends.
type pipeline struct {
	key    string // for the log: the target, and the size bound
	bounds api.Size
	cap    *capture
	log    *slog.Logger
	track  *webrtc.TrackLocalStaticSample
	// onEncoded is told of every frame sent (nil: nobody asks).
	onEncoded func(key bool, bytes int, took time.Duration)
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	stopping  atomic.Bool // stop was called: the end is no failure
	onEnd     func(*pipeline, error)

	// stage is the latest captured image at the pipeline's size in I420,
	// dirty what changed since the encoder last took it. Guarded by
	// stageMu: the capture goroutine writes, the encoder copies out. A
	// capture that comes before the encoder took the last one replaces it
	// (at most one frame waits).
	stageMu sync.Mutex
	stage   *yuv.Image
	dirty   image.Rectangle
	// scaled holds the scaled BGRX image of a pipeline smaller than its
	// target (nil at the target's size), updated where frames change.
	scaled []byte
	scaler scale.Scaler
	outs   []image.Rectangle

	// ratio is the current scale, num<<32 | den (0 before the first
	// frame): how a viewer's input maps back to the target.
	ratio atomic.Uint64
	// firstCapture is when the first capture came, in Unix nanoseconds.
	firstCapture atomic.Int64

	wake       chan struct{} // the encoder has something to do
	keyWanted  atomic.Bool
	maxFPS     atomic.Int64
	targetKbps atomic.Int64

	mu      sync.Mutex
	viewers map[*Viewer]struct{}
	joining int // viewers reserved by Join, not yet connected
	stats   Stats
	size    image.Point
	// keyReady is when the keyframe held for the first viewer was ready
	// (its startup).
	keyReady time.Time
}

func newPipeline(c *capture, bounds api.Size, fps int, log *slog.Logger, onEnd func(*pipeline, error)) (*pipeline, error) {
	key := c.key
	if bounds != (api.Size{}) {
		key = fmt.Sprintf("%s@max%dx%d", c.key, bounds.Width, bounds.Height)
	}
	track, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, "video", "cua-"+c.key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeline{key: key, bounds: bounds, cap: c, log: log, track: track, ctx: ctx, cancel: cancel, onEnd: onEnd,
		done: make(chan struct{}), wake: make(chan struct{}, 1), viewers: map[*Viewer]struct{}{}}
	p.maxFPS.Store(int64(fps))
	p.targetKbps.Store(vp8.DefaultBitrateKbps)
	return p, nil
}

func (p *pipeline) start() {
	go func() {
		err := p.encode()
		close(p.done)
		p.onEnd(p, err)
	}()
}

// stop ends the encoder goroutine and waits for it.
func (p *pipeline) stop() {
	p.stopping.Store(true)
	p.cancel()
	<-p.done
}

func (p *pipeline) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// requestKeyframe asks for a keyframe from the current image; the encoder
// serves it within MinKeyframeInterval of the previous one.
func (p *pipeline) requestKeyframe() {
	p.keyWanted.Store(true)
	p.poke()
}

// put takes a frame's changes into the stage: scaled first when the
// pipeline is smaller than the target (only the output pixels that read a
// changed one), then converted to I420.
func (p *pipeline) put(f Frame) error {
	num, den := api.StreamScale(f.Width, f.Height, p.bounds.Width, p.bounds.Height)
	r := scale.Ratio{Num: num, Den: den}
	w, h := r.Size(f.Width, f.Height)
	p.ratio.Store(uint64(num)<<32 | uint64(den))
	p.stageMu.Lock()
	defer p.stageMu.Unlock()
	rects := f.Damage
	if f.Full || p.stage == nil || p.stage.Width != w || p.stage.Height != h {
		rects = nil // all of it
	}
	if p.stage == nil || p.stage.Width != w || p.stage.Height != h {
		p.stage = yuv.New(w, h)
	}
	src := yuv.BGRX{Pix: f.Pix, Stride: f.Stride, Width: f.Width, Height: f.Height}
	if !r.IsOne() {
		var err error
		if src, rects, err = p.scale(f, r, w, h, rects); err != nil {
			return err
		}
	} else {
		p.scaled = nil
	}
	if err := yuv.Convert(p.stage, src, rects); err != nil {
		return err
	}
	p.firstCapture.CompareAndSwap(0, time.Now().UnixNano())
	whole := image.Rect(0, 0, w, h)
	if rects == nil {
		p.dirty = whole
	} else {
		for _, r := range rects {
			p.dirty = p.dirty.Union(r.Intersect(whole))
		}
	}
	return nil
}

// scale brings the changed rects of f (nil: all of it) into the scaled
// image, and answers it with the rects of it that changed.
func (p *pipeline) scale(f Frame, r scale.Ratio, w, h int, rects []image.Rectangle) (yuv.BGRX, []image.Rectangle, error) {
	if len(p.scaled) != w*h*4 {
		p.scaled = make([]byte, w*h*4)
		rects = nil
	}
	dst := scale.Frame{Pix: p.scaled, Stride: w * 4, Width: w, Height: h}
	src := scale.Frame{Pix: f.Pix, Stride: f.Stride, Width: f.Width, Height: f.Height}
	out := yuv.BGRX{Pix: p.scaled, Stride: w * 4, Width: w, Height: h}
	if rects == nil {
		return out, nil, p.scaler.Scale(dst, scale.BGRX, src, r)
	}
	p.outs = p.outs[:0]
	for _, d := range rects {
		o := r.OutRect(d, f.Width, f.Height)
		if o.Empty() {
			continue
		}
		if err := p.scaler.ScaleRect(dst, scale.BGRX, src, r, o); err != nil {
			return out, nil, err
		}
		p.outs = append(p.outs, o)
	}
	return out, p.outs, nil
}

// toTarget maps a point of the pipeline's frames to the target's pixel
// whose area it falls in, the rule of a scaled screenshot: frame point x
// lands on target pixel floor((x+0.5) * den/num). Before the first frame,
// and at the target's size, the point is the target's.
func (p *pipeline) toTarget(x, y float64) (float64, float64) {
	r := p.ratio.Load()
	num, den := float64(r>>32), float64(uint32(r))
	if r == 0 || num == den {
		return x, y
	}
	// (x+0.5)*den is exact for a whole x (den < 2^16), and the quotient
	// of an exact product rounds to the whole number it may equal, so
	// the floor is the exact rule's.
	return math.Floor((x + 0.5) * den / num), math.Floor((y + 0.5) * den / num)
}

// toFrame maps a point of the target (the pointer, for a viewer that
// draws it) to the frame pixel whose area holds it: toTarget's inverse on
// the pixel grid. A point outside the target stays outside the frame.
func (p *pipeline) toFrame(x, y int) (int, int) {
	r := p.ratio.Load()
	num, den := int64(r>>32), int64(uint32(r))
	if r == 0 || num == den {
		return x, y
	}
	floorDiv := func(a int64) int {
		q := a * num / den
		if a*num%den != 0 && a < 0 {
			q--
		}
		return int(q)
	}
	return floorDiv(int64(x)), floorDiv(int64(y))
}

// encode encodes the stage whenever the capture or a keyframe request
// wakes it, and sends the frame on the track, at most maxFPS a second.
// It answers the error that ended it (nil when stopped).
//
// While no viewer receives yet (the first one's ICE and DTLS run), it
// encodes one keyframe of the first capture and holds it: the viewer
// gets it the moment it connects, with the changes since as the next
// frame, so that its first frame costs no encode after it connected.
func (p *pipeline) encode() error {
	l := &encodeLoop{p: p, start: time.Now()}
	defer l.close()
	l.open()
	for {
		select {
		case <-p.ctx.Done():
			return nil
		case <-p.wake:
		}
		if err := l.step(time.Now()); err != nil {
			return err
		}
	}
}

// encodeLoop is the encoder goroutine's state.
type encodeLoop struct {
	p                          *pipeline
	enc                        *vp8.Encoder
	start, lastSample, lastKey time.Time
	lastSent                   time.Time // a frame or a keep-alive
	// stamped is when the last frame was written: the track's RTP clock
	// stands there until the next.
	stamped time.Time
	// held is the keyframe made while nobody received, the encoder's
	// last frame: valid until the next encode.
	held *vp8.Encoded
	// fresh: enc was opened before the first capture, on the source's
	// size hint, and has encoded nothing.
	fresh bool
	// timer serves what had to wait: a keyframe inside the rate limit, a
	// frame inside the pace.
	timer *time.Timer
}

func (l *encodeLoop) close() {
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.enc != nil {
		l.enc.Close()
	}
}

// open opens the encoder on the source's size hint, if it gives one,
// while the capture takes the first frame.
func (l *encodeLoop) open() {
	p := l.p
	h, ok := p.cap.src.(SizeHinter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, time.Second)
	w, ht, err := h.SizeHint(ctx)
	cancel()
	if err != nil || w < 1 || ht < 1 {
		return // the first capture tells
	}
	num, den := api.StreamScale(w, ht, p.bounds.Width, p.bounds.Height)
	// The scale is known now: the viewers' pointers map right before the
	// first capture (which sets it again).
	p.ratio.CompareAndSwap(0, uint64(num)<<32|uint64(den))
	w, ht = scale.Ratio{Num: num, Den: den}.Size(w, ht)
	if enc, err := vp8.NewEncoder(vp8.Options{Width: w, Height: ht, BitrateKbps: int(p.targetKbps.Load())}); err == nil {
		l.enc, l.fresh = enc, true
	}
}

func (l *encodeLoop) later(d time.Duration) {
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.p.poke)
	} else {
		l.timer.Reset(d)
	}
}

func (l *encodeLoop) step(now time.Time) error {
	p := l.p
	live, waiting := p.audience()
	if live == 0 {
		if l.held != nil {
			return nil // the changes wait in the stage for a viewer
		}
		ok, _, err := l.take()
		if !ok || err != nil {
			return err
		}
		out, err := l.enc.Encode(now.Sub(l.start), time.Second/api.DefaultStreamFPS, true)
		if err != nil {
			p.log.Error("stream encode", "stream", p.key, "err", err)
			return nil
		}
		l.held = &out
		p.mu.Lock()
		p.keyReady = time.Now()
		p.mu.Unlock()
		return nil
	}
	if waiting && l.held != nil {
		// A viewer connected: its first frame is ready; what changed
		// since follows at once.
		out := *l.held
		l.held = nil
		l.send(now, out, api.KeyframeReady)
		if !p.stageDirty() {
			return nil
		}
		waiting = false
	} else if !waiting && !p.keyWanted.Load() && !p.stageDirty() {
		// Nothing changed: the capture's keep-alive of a still target.
		// One padding packet, not a frame: it costs no encode, and its
		// sequence number shows a receiver that the last frame's final
		// packet was lost (which it then asks for again) as a frame would.
		if !l.lastSample.IsZero() && now.Sub(l.lastSent) >= KeepAliveInterval/2 {
			l.lastSent = now
			if err := p.track.GeneratePadding(1); err != nil {
				p.log.Debug("stream keep-alive", "stream", p.key, "err", err)
			}
		}
		return nil
	} else if fps := p.maxFPS.Load(); fps > 0 && !l.lastSample.IsZero() && !waiting && !p.keyWanted.Load() {
		interval := time.Second / time.Duration(fps)
		if early := interval - interval/paceSlack - now.Sub(l.lastSample); early > 0 {
			l.later(early)
			return nil // the changes wait in the stage
		}
	}
	ok, key, err := l.take()
	if !ok || err != nil {
		return err
	}
	switch {
	case waiting:
		// A viewer's first keyframe: not held back by the rate limit
		// (joins are bounded by the viewer slots, and each is served
		// once, by the first keyframe sent after it connected).
		key = true
	case p.keyWanted.Load():
		if wait := MinKeyframeInterval - now.Sub(l.lastKey); !l.lastKey.IsZero() && wait > 0 && !key {
			l.later(wait) // too soon after the last one: served at the end of the interval
		} else {
			key = true
		}
	}
	if key {
		p.keyWanted.Store(false)
	}
	_ = l.enc.SetBitrate(int(p.targetKbps.Load()))
	dur := time.Second / api.DefaultStreamFPS
	if !l.lastSample.IsZero() {
		dur = now.Sub(l.lastSample)
	}
	out, err := l.enc.Encode(now.Sub(l.start), dur, key)
	l.held = nil
	if err != nil {
		p.log.Error("stream encode", "stream", p.key, "err", err)
		return nil
	}
	l.send(now, out, api.KeyframeEncoded)
	return nil
}

// take copies what changed in the stage into the encoder's image,
// opening the encoder (a keyframe: key) for the first frame or a new
// size. ok is false while nothing was captured yet.
func (l *encodeLoop) take() (ok, key bool, err error) {
	p := l.p
	p.stageMu.Lock()
	if p.stage == nil {
		p.stageMu.Unlock()
		return false, false, nil // nothing captured yet; the first frame will come
	}
	sized := l.enc != nil && l.enc.Image().Width == p.stage.Width && l.enc.Image().Height == p.stage.Height
	if !sized {
		if l.enc != nil {
			l.enc.Close()
			l.enc = nil
		}
		l.held = nil
		l.enc, err = vp8.NewEncoder(vp8.Options{Width: p.stage.Width, Height: p.stage.Height, BitrateKbps: int(p.targetKbps.Load())})
		if err != nil {
			p.stageMu.Unlock()
			return false, false, fmt.Errorf("the encoder of %s: %w", p.key, err)
		}
	}
	if !sized || l.fresh {
		// A new encoder's first frame: the whole image, a keyframe.
		l.fresh = false
		p.dirty = image.Rect(0, 0, p.stage.Width, p.stage.Height)
		key = true
	}
	copyRows(l.enc.Image(), p.stage, p.dirty)
	p.dirty = image.Rectangle{}
	p.stageMu.Unlock()
	if key {
		// Outside stageMu: telling the viewers sends on their channels,
		// which must not hold up the capture.
		p.resized(l.enc.Image().Width, l.enc.Image().Height)
	}
	return true, key, nil
}

// send writes an encoded frame to the viewers and counts it; a keyframe
// is the first frame of each viewer that connected since the last one.
func (l *encodeLoop) send(now time.Time, out vp8.Encoded, how string) {
	p := l.p
	l.lastSample, l.lastSent = now, now
	if out.Key {
		l.lastKey = now
	}
	// A frame's RTP timestamp is when it is written, on the track's 90
	// kHz clock: the RTCP sender reports (pion's, which map RTP time to
	// the send time of the last frame) then place every frame where it
	// was, as the sound's packets are, and a receiver can put the two in
	// sync. A sample's Duration moves the clock after its own packets, so
	// the clock is moved first, by an empty sample (pion's packetizer
	// skips its ticks and sends nothing), and the frame written with none.
	// (Written with its Duration the time since the frame before, a
	// frame's timestamp was that frame's plus the interval before that
	// one: after a still spell, up to a second early, and the sender
	// reports moved with whichever frame or keep-alive came last.) The
	// keep-alive's padding carries the last frame's timestamp, so it
	// moves no sender report.
	stamp := time.Now()
	if !l.stamped.IsZero() {
		_ = p.track.WriteSample(media.Sample{Duration: stamp.Sub(l.stamped)})
	}
	l.stamped = stamp
	if err := p.track.WriteSample(media.Sample{Data: out.Data}); err != nil && !errors.Is(err, context.Canceled) {
		p.log.Debug("stream write", "stream", p.key, "err", err)
	}
	if p.onEncoded != nil {
		p.onEncoded(out.Key, len(out.Data), out.Took)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Encoded++
	p.stats.Bytes += int64(len(out.Data))
	p.stats.EncodeTime += out.Took
	p.stats.BitrateKbps = l.enc.Bitrate()
	if !out.Key {
		return
	}
	p.stats.Keyframes++
	p.stats.LastKeyframeBytes = len(out.Data)
	p.stats.LastKeyframeTook = out.Took
	sent := time.Now()
	for v := range p.viewers {
		if v.sending && !v.hasFirst {
			v.hasFirst = true
			v.start.first(sent, how, out.Took, time.Unix(0, p.firstCapture.Load()), p.keyReady)
		}
	}
}

// audience is the number of viewers frames reach, and whether one of
// them still waits for its first keyframe.
func (p *pipeline) audience() (live int, waiting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for v := range p.viewers {
		if v.sending {
			live++
			waiting = waiting || !v.hasFirst
		}
	}
	return live, waiting
}

// connect counts v in the audience once it connected (frames reach it),
// and wakes the encoder for its first keyframe.
func (p *pipeline) connect(v *Viewer) {
	p.mu.Lock()
	v.sending = true
	p.mu.Unlock()
	p.poke()
}

// stageDirty says the stage changed since the encoder last took it.
func (p *pipeline) stageDirty() bool {
	p.stageMu.Lock()
	defer p.stageMu.Unlock()
	return !p.dirty.Empty()
}

// copyRows copies the rows of r (widened to even rows) from the stage to
// the encoder's image; both have the same size and tight strides.
func copyRows(dst, src *yuv.Image, r image.Rectangle) {
	if r.Empty() {
		return
	}
	y0, y1 := r.Min.Y&^1, min((r.Max.Y+1)&^1, src.Height)
	copy(dst.Y[y0*dst.YStride:y1*dst.YStride], src.Y[y0*src.YStride:y1*src.YStride])
	_, ch := yuv.ChromaSize(src.Width, src.Height)
	c0, c1 := y0/2, min((y1+1)/2, ch)
	copy(dst.U[c0*dst.CStride:c1*dst.CStride], src.U[c0*src.CStride:c1*src.CStride])
	copy(dst.V[c0*dst.CStride:c1*dst.CStride], src.V[c0*src.CStride:c1*src.CStride])
}

// resized records the new frame size and tells the viewers.
func (p *pipeline) resized(w, h int) {
	p.mu.Lock()
	p.size = image.Pt(w, h)
	p.stats.Width, p.stats.Height = w, h
	vs := make([]*Viewer, 0, len(p.viewers))
	for v := range p.viewers {
		vs = append(vs, v)
	}
	p.mu.Unlock()
	for _, v := range vs {
		v.sendSize(w, h)
	}
}

func (p *pipeline) frameSize() image.Point {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size
}

// rebalance sets the encoder's target to what the slowest viewer's
// congestion control allows, within the encoder's bounds.
func (p *pipeline) rebalance() {
	p.mu.Lock()
	kbps := 0
	for v := range p.viewers {
		if r := int(v.bitrate.Load() / 1000); r > 0 && (kbps == 0 || r < kbps) {
			kbps = r
		}
	}
	p.mu.Unlock()
	if kbps > 0 {
		p.targetKbps.Store(int64(min(max(kbps, vp8.MinBitrateKbps), vp8.MaxBitrateKbps)))
	}
}

func (p *pipeline) snapshot() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// viewerList is a copy of the pipeline's viewers.
func (p *pipeline) viewerList() []*Viewer {
	p.mu.Lock()
	defer p.mu.Unlock()
	vs := make([]*Viewer, 0, len(p.viewers))
	for v := range p.viewers {
		vs = append(vs, v)
	}
	return vs
}
