package rtc

import (
	"context"
	"errors"
	"image"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/yuv"
)

// Frame is one capture of a stream's target: BGRX pixels as the X server
// holds them, with what changed since the previous frame (Damage), or
// Full when every pixel is new. Its Pix is valid until the next Next.
type Frame struct {
	Pix           []byte
	Stride        int
	Width, Height int
	Damage        []image.Rectangle
	Full          bool
}

// Source yields a target's frames as they change (desktop.Capturer): Next
// waits for a change, RequestFull makes the next frame whole, Close ends
// a waiting Next. An error of kind not_found ends the stream (the window
// is gone).
type Source interface {
	Next(ctx context.Context) (Frame, error)
	RequestFull()
	Close()
}

// Pacing and keyframe bounds of a pipeline.
const (
	// KeepAliveInterval: an idle target sends one (tiny) frame this
	// often, so that a viewer can tell a still screen from a dead stream.
	KeepAliveInterval = time.Second
	// MinKeyframeInterval rate-limits forced keyframes: PLIs and FIRs of
	// many viewers, or a viewer that asks in a loop, cannot turn the
	// stream into keyframes only. A request inside the interval is served
	// at its end, never dropped.
	MinKeyframeInterval = 100 * time.Millisecond
	// captureRetry is the pause after a failed capture; maxCaptureErrors
	// in a row end the stream.
	captureRetry     = 200 * time.Millisecond
	maxCaptureErrors = 25
	// hiddenRetry is how often a minimized window is looked for again.
	hiddenRetry = 250 * time.Millisecond
)

// Stats are a pipeline's counters, for the benchmarks and metrics.
type Stats struct {
	Captured  int64 // frames read from the source
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

// pipeline is one target's capture, conversion and encoder, shared by
// every viewer of the target: capture → I420 (changed rows) → VP8 → the
// one track every viewer's peer connection sends.
type pipeline struct {
	key   string
	log   *slog.Logger
	src   Source
	track *webrtc.TrackLocalStaticSample
	onEnd func(*pipeline, error) // the engine forgets it
	// onEncoded is told of every frame sent (nil: nobody asks).
	onEncoded func(key bool, bytes int, took time.Duration)
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}

	// stage is the latest captured image in I420, dirty what changed since
	// the encoder last took it. Guarded by stageMu: the capture goroutine
	// writes, the encoder copies out. A capture that comes before the
	// encoder took the last one replaces it (at most one frame waits).
	stageMu sync.Mutex
	stage   *yuv.Image
	dirty   image.Rectangle

	stopping   atomic.Bool   // stop was called: the end is no failure
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

func newPipeline(key string, src Source, fps int, log *slog.Logger, onEnd func(*pipeline, error)) (*pipeline, error) {
	track, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, "video", "cua-"+key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeline{key: key, log: log, src: src, track: track, onEnd: onEnd, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1), viewers: map[*Viewer]struct{}{}}
	p.maxFPS.Store(int64(fps))
	p.targetKbps.Store(vp8.DefaultBitrateKbps)
	return p, nil
}

func (p *pipeline) start() {
	var wg sync.WaitGroup
	var capErr error
	wg.Go(func() {
		capErr = p.capture()
		p.cancel() // the encoder ends with the capture
	})
	wg.Go(p.encode)
	go func() {
		wg.Wait()
		p.src.Close()
		close(p.done)
		p.onEnd(p, capErr)
	}()
}

// stop ends the pipeline's goroutines and waits for them.
func (p *pipeline) stop() {
	p.stopping.Store(true)
	p.cancel()
	p.src.Close() // ends a waiting Next
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

// capture reads the source's frames, at most maxFPS a second, into the
// stage. It answers the error that ended the stream (nil when stopped).
func (p *pipeline) capture() error {
	var last, lastPoke time.Time
	errorsInRow := 0
	for {
		if fps := p.maxFPS.Load(); fps > 0 && !last.IsZero() {
			if wait := time.Second/time.Duration(fps) - time.Since(last); wait > 0 {
				select {
				case <-p.ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
		}
		ctx, cancel := context.WithTimeout(p.ctx, KeepAliveInterval)
		began := time.Now() // the pace counts from here: reading is part of a frame's time
		f, err := p.src.Next(ctx)
		cancel()
		if p.ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if api.KindOf(err) == api.KindTimeout {
				p.poke() // nothing changed for a second: the keep-alive frame
				continue
			}
			switch api.KindOf(err) {
			case api.KindCancelled:
				return err
			case api.KindNotFound:
				return err // the window went
			case api.KindInvalidArgument:
				// The window is minimized (or off the screen): waited for
				// as long as it takes, the viewers getting keep-alives of
				// the last image meanwhile; its first frame when it is
				// back is whole.
				if time.Since(lastPoke) >= KeepAliveInterval {
					p.poke()
					lastPoke = time.Now()
				}
				select {
				case <-p.ctx.Done():
					return nil
				case <-time.After(hiddenRetry):
				}
				continue
			}
			errorsInRow++
			p.log.Warn("stream capture failed", "stream", p.key, "err", err, "in_a_row", errorsInRow)
			if errorsInRow >= maxCaptureErrors {
				return err
			}
			select {
			case <-p.ctx.Done():
				return nil
			case <-time.After(captureRetry):
			}
			continue
		}
		errorsInRow = 0
		last = began
		if err := p.put(f); err != nil {
			return err
		}
		p.mu.Lock()
		p.stats.Captured++
		p.mu.Unlock()
		p.poke()
	}
}

// put converts a frame's changes into the stage.
func (p *pipeline) put(f Frame) error {
	p.stageMu.Lock()
	defer p.stageMu.Unlock()
	rects := f.Damage
	if p.stage == nil || p.stage.Width != f.Width || p.stage.Height != f.Height {
		p.stage = yuv.New(f.Width, f.Height)
		rects = nil
	} else if f.Full {
		rects = nil
	}
	if err := yuv.Convert(p.stage, yuv.BGRX{Pix: f.Pix, Stride: f.Stride, Width: f.Width, Height: f.Height}, rects); err != nil {
		return err
	}
	full := image.Rect(0, 0, f.Width, f.Height)
	if rects == nil {
		p.dirty = full
	} else {
		for _, r := range rects {
			p.dirty = p.dirty.Union(r.Intersect(full))
		}
	}
	return nil
}

// encode encodes the stage whenever the capture or a keyframe request
// wakes it, and sends the frame on the track.
func (p *pipeline) encode() {
	var enc *vp8.Encoder
	defer func() {
		if enc != nil {
			enc.Close()
		}
	}()
	start := time.Now()
	var lastSample, lastKey time.Time
	var keyTimer *time.Timer
	defer func() {
		if keyTimer != nil {
			keyTimer.Stop()
		}
	}()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.wake:
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
				p.log.Error("stream encoder", "stream", p.key, "err", err)
				p.cancel()
				return
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

		now := time.Now()
		if p.keyWanted.Load() {
			if wait := MinKeyframeInterval - now.Sub(lastKey); !lastKey.IsZero() && wait > 0 && !key {
				// Too soon after the last one: serve it at the end of the interval.
				if keyTimer == nil {
					keyTimer = time.AfterFunc(wait, func() { p.poke() })
				} else {
					keyTimer.Reset(wait)
				}
			} else {
				key = true
			}
		}
		if key {
			p.keyWanted.Store(false)
		}
		_ = enc.SetBitrate(int(p.targetKbps.Load()))
		dur := time.Second / 30
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
