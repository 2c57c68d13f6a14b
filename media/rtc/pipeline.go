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

	wake       chan struct{} // the encoder has something to do
	keyWanted  atomic.Bool
	maxFPS     atomic.Int64
	targetKbps atomic.Int64

	mu      sync.Mutex
	viewers map[*Viewer]struct{}
	joining int // viewers reserved by Join, not yet connected
	stats   Stats
	size    image.Point
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
func (p *pipeline) encode() error {
	var enc *vp8.Encoder
	defer func() {
		if enc != nil {
			enc.Close()
		}
	}()
	start := time.Now()
	var lastSample, lastKey time.Time
	// timer serves what had to wait: a keyframe inside the rate limit, a
	// frame inside the pace.
	var timer *time.Timer
	later := func(d time.Duration) {
		if timer == nil {
			timer = time.AfterFunc(d, p.poke)
		} else {
			timer.Reset(d)
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-p.ctx.Done():
			return nil
		case <-p.wake:
		}
		now := time.Now()
		if fps := p.maxFPS.Load(); fps > 0 && !lastSample.IsZero() && !p.keyWanted.Load() {
			interval := time.Second / time.Duration(fps)
			if early := interval - interval/paceSlack - now.Sub(lastSample); early > 0 {
				later(early)
				continue // the changes wait in the stage
			}
		}
		key := false
		p.stageMu.Lock()
		if p.stage == nil {
			p.stageMu.Unlock()
			continue // nothing captured yet; the first frame will come
		}
		if enc == nil || enc.Image().Width != p.stage.Width || enc.Image().Height != p.stage.Height {
			if enc != nil {
				enc.Close()
			}
			var err error
			enc, err = vp8.NewEncoder(vp8.Options{Width: p.stage.Width, Height: p.stage.Height, BitrateKbps: int(p.targetKbps.Load())})
			if err != nil {
				p.stageMu.Unlock()
				return fmt.Errorf("the encoder of %s: %w", p.key, err)
			}
			p.dirty = image.Rect(0, 0, p.stage.Width, p.stage.Height)
			key = true
		}
		copyRows(enc.Image(), p.stage, p.dirty)
		p.dirty = image.Rectangle{}
		p.stageMu.Unlock()
		if key {
			// Outside stageMu: telling the viewers sends on their
			// channels, which must not hold up the capture.
			p.resized(enc.Image().Width, enc.Image().Height)
		}

		if p.keyWanted.Load() {
			if wait := MinKeyframeInterval - now.Sub(lastKey); !lastKey.IsZero() && wait > 0 && !key {
				later(wait) // too soon after the last one: served at the end of the interval
			} else {
				key = true
			}
		}
		if key {
			p.keyWanted.Store(false)
		}
		_ = enc.SetBitrate(int(p.targetKbps.Load()))
		dur := time.Second / api.DefaultStreamFPS
		if !lastSample.IsZero() {
			dur = now.Sub(lastSample)
		}
		out, err := enc.Encode(now.Sub(start), dur, key)
		if err != nil {
			p.log.Error("stream encode", "stream", p.key, "err", err)
			continue
		}
		lastSample = now
		if out.Key {
			lastKey = now
		}
		if err := p.track.WriteSample(media.Sample{Data: out.Data, Duration: dur}); err != nil && !errors.Is(err, context.Canceled) {
			p.log.Debug("stream write", "stream", p.key, "err", err)
		}
		if p.onEncoded != nil {
			p.onEncoded(out.Key, len(out.Data), out.Took)
		}
		p.mu.Lock()
		p.stats.Encoded++
		p.stats.Bytes += int64(len(out.Data))
		p.stats.EncodeTime += out.Took
		p.stats.BitrateKbps = enc.Bitrate()
		if out.Key {
			p.stats.Keyframes++
			p.stats.LastKeyframeBytes = len(out.Data)
			p.stats.LastKeyframeTook = out.Took
		}
		p.mu.Unlock()
	}
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
