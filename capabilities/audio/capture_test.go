package audio_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// firstFrameTimeout bounds the wait for a capture's first frame: an idle
// null sink renders in blocks of up to 2 s.
const firstFrameTimeout = 10 * time.Second

// open opens a capture of srv's desktop mix and waits until audio flows.
func open(t testing.TB, srv *audiotest.Server) *audio.Capture {
	t.Helper()
	c, err := audio.Open(t.Context(), audio.Options{Server: srv.Addr})
	if err != nil {
		t.Fatalf("open: %v\n%s", err, srv.Log())
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), firstFrameTimeout)
	defer cancel()
	if _, err := c.Read(ctx, make([]int16, audio.FrameLen)); err != nil {
		t.Fatalf("first frame: %v", err)
	}
	return c
}

// frame is one Read's answer.
type frame struct {
	pcm      []int16
	at, read time.Time // as Read answered; when it returned
}

// record reads frames until ctx ends or Read fails, and answers them
// when stop is called.
func record(t testing.TB, c *audio.Capture) (stop func() []frame) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []frame, 1)
	go func() {
		var out []frame
		for {
			f := frame{pcm: make([]int16, audio.FrameLen)}
			var err error
			f.at, err = c.Read(ctx, f.pcm)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("read: %v", err)
				}
				done <- out
				return
			}
			f.read = time.Now()
			out = append(out, f)
		}
	}()
	return func() []frame {
		cancel()
		return <-done
	}
}

// left is a frame's left channel.
func left(pcm []int16) []int16 {
	out := make([]int16, 0, len(pcm)/2)
	for i := 0; i < len(pcm); i += 2 {
		out = append(out, pcm[i])
	}
	return out
}

func peak(pcm []int16) int {
	m := 0
	for _, v := range pcm {
		m = max(m, int(math.Abs(float64(v))))
	}
	return m
}

// frequency estimates the frequency of a tone from the rising zero
// crossings of x, each placed between its two samples by linear
// interpolation: over a tenth of a second it is exact to well within 1 %.
func frequency(x []int16) float64 {
	var first, last float64
	n := 0
	for i := 1; i < len(x); i++ {
		if x[i-1] < 0 && x[i] >= 0 {
			at := float64(i-1) + float64(-x[i-1])/float64(int(x[i])-int(x[i-1]))
			if n == 0 {
				first = at
			}
			last = at
			n++
		}
	}
	if n < 2 {
		return 0
	}
	return float64(n-1) * audio.SampleRate / (last - first)
}

// tones splits frames into runs of loud frames (peak over a quarter of
// full scale) of one frequency, and answers each run's left channel: a
// quiet frame or a change of frequency (two tones played back to back)
// ends a run.
func tones(frames []frame) [][]int16 {
	var runs [][]int16
	var cur []int16
	prev := 0.0
	for _, f := range frames {
		l := left(f.pcm)
		hz := frequency(l)
		loud := peak(f.pcm) > math.MaxInt16/4
		if len(cur) > 0 && (!loud || math.Abs(hz-prev) > prev/10) {
			runs = append(runs, cur)
			cur = nil
		}
		if loud {
			cur = append(cur, l...)
		}
		prev = hz
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// TestTones: a 440 Hz tone then an 880 Hz tone played into the sink are
// captured, each at its frequency within 2 %, in that order, the same on
// both channels.
func TestTones(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := open(t, srv)
	stop := record(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	played := []float64{440, 880}
	for _, f := range played {
		if err := srv.PlayTone(ctx, f, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	// paplay returns once its stream drained: the tone is on its way.
	time.Sleep(100 * time.Millisecond)
	frames := stop()
	for _, f := range frames {
		for i := 0; i < len(f.pcm); i += 2 {
			if f.pcm[i] != f.pcm[i+1] {
				t.Fatalf("left %d, right %d: the tone is the same on both channels", f.pcm[i], f.pcm[i+1])
			}
		}
	}
	var runs [][]int16
	for _, r := range tones(frames) {
		if len(r) >= audio.SampleRate/10 { // 100 ms or more: a tone, not an edge
			runs = append(runs, r)
		}
	}
	if len(runs) != len(played) {
		t.Fatalf("%d tones captured in %d frames, want %d", len(runs), len(frames), len(played))
	}
	for i, want := range played {
		got := frequency(runs[i])
		if math.Abs(got-want) > want*0.02 {
			t.Errorf("tone %d: %.1f Hz, want %.0f Hz within 2 %%", i, got, want)
		}
		t.Logf("tone %d: %.2f Hz (played %.0f Hz), %d ms captured", i, got, want, len(runs[i])*1000/audio.SampleRate)
	}
}

// TestSilence: a sink that plays nothing is captured as zeros, in frames
// that follow each other by 20 ms and are stamped close to now.
func TestSilence(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := open(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var prev time.Time
	for i := range 50 {
		pcm := make([]int16, audio.FrameLen)
		for j := range pcm {
			pcm[j] = 12345 // Read must overwrite every value
		}
		at, err := c.Read(ctx, pcm)
		if err != nil {
			t.Fatal(err)
		}
		if p := peak(pcm); p > 8 {
			t.Fatalf("frame %d of silence peaks at %d", i, p)
		}
		// Played a little before it is read: the frame's end arrived,
		// then the frame's 20 ms back; a monitor's time may run up to
		// the sink's latency ahead.
		if age := time.Since(at); age < -50*time.Millisecond || age > 250*time.Millisecond {
			t.Errorf("frame %d: played %v ago", i, age)
		}
		if i > 0 {
			if step := at.Sub(prev); step < audio.FrameDuration-3*time.Millisecond || step > audio.FrameDuration+3*time.Millisecond {
				t.Errorf("frame %d: %v after the one before, want %v", i, step, audio.FrameDuration)
			}
		}
		prev = at
	}
	if d := c.Dropped(); d != 0 {
		t.Errorf("%v dropped for a reader that keeps up", d)
	}
}

// TestBehind: a reader that falls behind finds at most MaxQueue held,
// the oldest audio dropped and counted, and the frames it then reads in
// sequence.
func TestBehind(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := open(t, srv)
	// Not reading is what is tested: time passes for it.
	time.Sleep(time.Second)
	if d := c.Dropped(); d < 600*time.Millisecond || d > time.Second {
		t.Errorf("%v dropped after a second unread, want about %v", d, time.Second-audio.MaxQueue)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pcm := make([]int16, audio.FrameLen)
	var first, prev time.Time
	held := int(audio.MaxQueue / audio.FrameDuration)
	for i := range held {
		at, err := c.Read(ctx, pcm)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = at
		} else if step := at.Sub(prev); step < audio.FrameDuration-3*time.Millisecond || step > audio.FrameDuration+3*time.Millisecond {
			t.Errorf("frame %d: %v after the one before", i, step)
		}
		prev = at
	}
	// The oldest frame held was about MaxQueue old.
	if age := time.Since(first); age < audio.MaxQueue-60*time.Millisecond || age > audio.MaxQueue+150*time.Millisecond {
		t.Errorf("the oldest frame held was played %v ago, want about %v", age, audio.MaxQueue)
	}
}

// waitIdle reads until Read has nothing more to answer: the source is
// suspended, and what it sent before is read.
func waitIdle(t *testing.T, c *audio.Capture) {
	t.Helper()
	pcm := make([]int16, audio.FrameLen)
	for range 100 {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		_, err := c.Read(ctx, pcm)
		cancel()
		if api.KindOf(err) == api.KindTimeout {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("frames still come from a suspended sink")
}

// TestReadEnds: a Read waiting for audio (the sink suspended) ends when
// its context ends, or when the capture is closed.
func TestReadEnds(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	for _, tc := range []struct {
		name string
		end  func(c *audio.Capture, cancel context.CancelFunc)
		want api.Kind
	}{
		{"cancel", func(_ *audio.Capture, cancel context.CancelFunc) { cancel() }, api.KindCancelled},
		{"close", func(c *audio.Capture, _ context.CancelFunc) { c.Close() }, api.KindCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, srv)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := srv.Suspend(ctx, true); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Suspend(context.Background(), false) })
			waitIdle(t, c)
			// The Read below must be waiting when it is ended: the wait
			// is what is tested.
			timer := time.AfterFunc(100*time.Millisecond, func() { tc.end(c, cancel) })
			defer timer.Stop()
			start := time.Now()
			_, err := c.Read(ctx, make([]int16, audio.FrameLen))
			if api.KindOf(err) != tc.want {
				t.Errorf("Read: %v, want kind %s", err, tc.want)
			}
			if tc.name == "close" && !errors.Is(err, audio.ErrClosed) {
				t.Errorf("Read after Close: %v, want ErrClosed", err)
			}
			if el := time.Since(start); el < 90*time.Millisecond || el > time.Second {
				t.Errorf("Read returned after %v, want soon after 100ms", el)
			}
		})
	}
}

// TestServerKilled: a server that dies mid-stream ends Read with kind
// env at once, not a hang.
func TestServerKilled(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := open(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	srv.Kill()
	start := time.Now()
	pcm := make([]int16, audio.FrameLen)
	var err error
	for n := 0; err == nil; n++ {
		if n > int(audio.MaxQueue/audio.FrameDuration)+1 {
			t.Fatalf("%d frames after the server died", n)
		}
		_, err = c.Read(ctx, pcm)
	}
	if api.KindOf(err) != api.KindEnv {
		t.Errorf("Read after the server died: %v, want kind env", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Read answered %v after the server died", el)
	}
	t.Logf("after the server died: %v", err)
	c.Close()
	if _, err := c.Read(ctx, pcm); !errors.Is(err, audio.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

// TestReadArguments: a frame of the wrong size is refused; so is a Read
// whose context has ended, even with audio held.
func TestReadArguments(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := open(t, srv)
	if _, err := c.Read(t.Context(), make([]int16, audio.FrameLen-1)); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("short frame: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Read(ctx, make([]int16, audio.FrameLen)); api.KindOf(err) != api.KindCancelled {
		t.Errorf("ended context: %v", err)
	}
}
