package rtc

import (
	"context"
	"image"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// Frame is one capture of a stream's target: BGRX pixels as the X server
// holds them, with what changed since the previous frame (Damage), or
// Full when every pixel is new. Its Pix holds the whole current image and
// is valid until the next Next.
type Frame struct {
	Pix           []byte
	Stride        int
	Width, Height int
	Damage        []image.Rectangle
	Full          bool
}

// Source yields a target's frames as they change (desktop.Capturer): Next
// waits for a change, RequestFull makes the next frame whole (and comes at
// once), Close ends a waiting Next. An error of kind not_found ends the
// stream (the window is gone).
type Source interface {
	Next(ctx context.Context) (Frame, error)
	RequestFull()
	Close()
}

// SizeHinter is a Source that can tell the size of its frames before the
// first one: a new pipeline opens its encoder meanwhile (a 1080p one
// takes some 25 ms to open), so that the first keyframe waits only for
// the first capture.
type SizeHinter interface {
	SizeHint(ctx context.Context) (width, height int, err error)
}

// Pacing bounds of a capture.
const (
	// KeepAliveInterval: an idle target sends one RTP padding packet this
	// often, so that a viewer can tell a still screen from a dead stream
	// and learns of a lost last packet.
	KeepAliveInterval = time.Second
	// captureRetry is the pause after a failed capture; maxCaptureErrors
	// in a row end the stream.
	captureRetry     = 200 * time.Millisecond
	maxCaptureErrors = 25
	// hiddenRetry is how often a minimized window is looked for again.
	hiddenRetry = 250 * time.Millisecond
)

// capture is one target's source, shared by the pipelines of every frame
// size its viewers asked for: each change is read once, at the highest
// frame rate any of them asked, and handed to each pipeline, which scales,
// converts and encodes it on its own. It starts with its first pipeline
// and stops with its last, so that nothing is captured while nobody
// watches.
type capture struct {
	key   string
	log   *slog.Logger
	src   Source
	onEnd func(*capture, error) // the engine forgets it and ends its viewers

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	stopping atomic.Bool // stop was called: the end is no failure

	// pipes are the pipelines by the size bounds their viewers asked
	// for; the engine adds and removes them under its lock and mu, the
	// capture goroutine reads them under mu.
	mu    sync.Mutex
	pipes map[api.Size]*pipeline
}

func newCapture(key string, src Source, log *slog.Logger, onEnd func(*capture, error)) *capture {
	ctx, cancel := context.WithCancel(context.Background())
	return &capture{key: key, log: log, src: src, onEnd: onEnd, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), pipes: map[api.Size]*pipeline{}}
}

func (c *capture) start() {
	go func() {
		err := c.run()
		c.src.Close()
		close(c.done)
		c.onEnd(c, err)
	}()
}

// stop ends the capture goroutine and waits for it.
func (c *capture) stop() {
	c.stopping.Store(true)
	c.cancel()
	c.src.Close() // ends a waiting Next
	<-c.done
}

// add makes p one of the capture's pipelines. A pipeline joining a
// running capture asks for a whole frame at once, so that its first frame
// does not wait for the screen to change.
func (c *capture) add(p *pipeline) {
	c.mu.Lock()
	running := len(c.pipes) > 0
	c.pipes[p.bounds] = p
	c.mu.Unlock()
	if running {
		c.src.RequestFull()
	}
}

// remove takes p out; it answers whether the capture has none left.
func (c *capture) remove(p *pipeline) (empty bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pipes[p.bounds] == p {
		delete(c.pipes, p.bounds)
	}
	return len(c.pipes) == 0
}

// pipelines are the current pipelines, and the highest frame rate they ask.
func (c *capture) pipelines(into []*pipeline) ([]*pipeline, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fps := 0
	for _, p := range c.pipes {
		into = append(into, p)
		fps = max(fps, int(p.maxFPS.Load()))
	}
	return into, fps
}

// run reads the source's frames, at most the highest rate a pipeline
// asks, into every pipeline. It answers the error that ended the stream
// (nil when stopped).
func (c *capture) run() error {
	// next is when the next capture is due: each frame's slot follows
	// the last one's, not the moment it was taken, so that a timer's
	// lateness does not add up (at 30 fps, a millisecond late a frame
	// made 29).
	var next, lastPoke time.Time
	var pipes []*pipeline
	errorsInRow := 0
	for {
		var fps int
		pipes, fps = c.pipelines(pipes[:0])
		if fps > 0 && !next.IsZero() {
			if wait := time.Until(next); wait > 0 {
				select {
				case <-c.ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, KeepAliveInterval)
		f, err := c.src.Next(ctx)
		cancel()
		if c.ctx.Err() != nil {
			return nil
		}
		if err != nil {
			switch api.KindOf(err) {
			case api.KindTimeout:
				c.poke() // nothing changed for a second: the keep-alive frame
				continue
			case api.KindCancelled, api.KindNotFound:
				return err // closed, or the window went
			case api.KindInvalidArgument:
				// The window is minimized (or off the screen): waited for
				// as long as it takes, the viewers getting keep-alives of
				// the last image meanwhile; its first frame when it is
				// back is whole.
				if time.Since(lastPoke) >= KeepAliveInterval {
					c.poke()
					lastPoke = time.Now()
				}
				select {
				case <-c.ctx.Done():
					return nil
				case <-time.After(hiddenRetry):
				}
				continue
			}
			errorsInRow++
			c.log.Warn("stream capture failed", "stream", c.key, "err", err, "in_a_row", errorsInRow)
			if errorsInRow >= maxCaptureErrors {
				return err
			}
			select {
			case <-c.ctx.Done():
				return nil
			case <-time.After(captureRetry):
			}
			continue
		}
		errorsInRow = 0
		if fps > 0 {
			interval := time.Second / time.Duration(fps)
			if now := time.Now(); next.IsZero() || now.Sub(next) > interval {
				next = now // a still spell, or far behind: the slots start again
			}
			next = next.Add(interval)
		}
		// The pipelines of this frame: one added since the pacing took
		// its first frame whole (its stage is empty), whatever f says.
		pipes, _ = c.pipelines(pipes[:0])
		for _, p := range pipes {
			if err := p.put(f); err != nil {
				return err
			}
			p.poke()
		}
	}
}

// poke wakes every pipeline's encoder: the keep-alive of a still target.
func (c *capture) poke() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pipes {
		p.poke()
	}
}
