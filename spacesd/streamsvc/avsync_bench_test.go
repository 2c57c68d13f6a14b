package streamsvc_test

import (
	"context"
	"fmt"
	"image"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// The A/V sync benchmark: flashes of the screen and clicks in the sound
// made at the same instants, and where the receiver puts each on the
// sender's clock.
const (
	avFlashes = 20
	avPeriod  = 500 * time.Millisecond
	// avLit is how long a flash stays white before the window is black
	// again.
	avLit = 150 * time.Millisecond
	// avWindow is the side of the window that flashes.
	avWindow = 200
	// ownClicks are the clicks timed on the sink's monitor alone, before
	// the stream starts.
	ownClicks = 10
	// clickLen of a 1 kHz square wave at clickLevel: an onset sharp in
	// any codec; clickThreshold finds it (a quarter of full scale, far
	// over the null sink's silence and Opus's pre-echo). clickLead of
	// silence comes first: a new stream on a sink is mixed in by
	// rewinding what the sink had rendered ahead, which its monitor
	// (the capture's source) has already passed on, so a stream's first
	// milliseconds never reach the monitor (a click alone was lost one
	// time in three).
	clickLen       = 5 * time.Millisecond
	clickLead      = 20 * time.Millisecond
	clickLevel     = math.MaxInt16 * 9 / 10
	clickThreshold = math.MaxInt16 / 4
)

// click is the sound of each flash: clickLead of silence, then the click.
func click() []int16 {
	lead, n := int(clickLead.Seconds()*audiotest.SampleRate), int(clickLen.Seconds()*audiotest.SampleRate)
	pcm := make([]int16, lead*audiotest.Channels, (lead+n)*audiotest.Channels)
	for i := range n {
		v := int16(clickLevel)
		if i/(audiotest.SampleRate/2000)%2 == 1 {
			v = -v
		}
		pcm = append(pcm, v, v)
	}
	return pcm
}

// onsetIn is the index (per channel) of the first sample of interleaved
// stereo pcm over clickThreshold, or -1.
func onsetIn(pcm []int16) int {
	for i := 0; i < len(pcm); i += 2 {
		if v := pcm[i]; v > clickThreshold || v < -clickThreshold {
			return i / 2
		}
	}
	return -1
}

// samplesDur is the length of n samples at 48 kHz.
func samplesDur(n int) time.Duration { return time.Duration(n) * time.Second / opus.SampleRate }

// ownLatency times n clicks from play's call to their onset on the
// sink's monitor, as a capture of our own (capabilities/audio, as the
// daemon's) says it was played.
func ownLatency(b *testing.B, srv *audiotest.Server, n int, play func()) []time.Duration {
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	c, err := audio.Open(ctx, audio.Options{Server: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pcm := make([]int16, audio.FrameLen)
	readFor := func(d time.Duration) {
		for range d / audio.FrameDuration {
			if _, err := c.Read(ctx, pcm); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The first blocks of a sink that idled come in a burst, and a first
	// sound may wait for the sink's next (up to 2 s): one click not
	// counted.
	readFor(500 * time.Millisecond)
	play()
	readFor(2500 * time.Millisecond)
	var out []time.Duration
	for range n {
		t0 := time.Now()
		play()
		for k := 0; ; k++ {
			if k == int(time.Second/audio.FrameDuration) {
				b.Fatal("a click was not heard on the sink's monitor within a second")
			}
			at, err := c.Read(ctx, pcm)
			if err != nil {
				b.Fatalf("the click was not heard on the monitor: %v", err)
			}
			if i := onsetIn(pcm); i >= 0 {
				out = append(out, at.Add(samplesDur(i)).Sub(t0))
				break
			}
		}
		readFor(300 * time.Millisecond) // the click's tail, and a pause
	}
	return out
}

// onsetsOnMonitor records the onset of every click on the sink's monitor
// (a capture of our own beside the daemon's) until the answered function
// is called, which answers them.
func onsetsOnMonitor(b *testing.B, srv *audiotest.Server) func() []time.Time {
	ctx, cancel := context.WithCancel(b.Context())
	c, err := audio.Open(ctx, audio.Options{Server: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	var onsets []time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		pcm := make([]int16, audio.FrameLen)
		loud := false // the click's tail in the next frame is no new click
		for {
			at, err := c.Read(ctx, pcm)
			if err != nil {
				return
			}
			i := onsetIn(pcm)
			if i >= 0 && !loud {
				onsets = append(onsets, at.Add(samplesDur(i)))
			}
			loud = i >= 0
		}
	}()
	stop := func() []time.Time {
		cancel()
		c.Close()
		<-done
		return onsets
	}
	b.Cleanup(func() { stop() })
	return stop
}

// seen is a decoded video frame (white: the flash) or audio packet
// (white: a click in it), placed on the sender's clock by its track's
// latest sender report at the time, when one had come.
type seen struct {
	arrived, wall time.Time
	mapped, white bool
}

// BenchmarkStreamAVSync: the screen flashes white and a click plays at
// the same instants, avFlashes times; a receiver of the picture and the
// sound (audio=1) finds each flash in the decoded video and each click in
// the decoded Opus, places both on the sender's clock by their RTP
// timestamps and the RTCP sender reports, and reports the skew between
// them, less the benchmark's own audio latency (the click's way from the
// player to the sink, measured first on the sink's monitor alone).
func BenchmarkStreamAVSync(b *testing.B) {
	desktoptest.Require(b)
	for range b.N {
		snd := startBenchSound(b)
		clk := click()
		// A paplay per click: its start-up is a few ms. (A paplay or
		// pacat kept running on a pipe, fed in real time, held some 2 s
		// of sound whatever latency it was asked for: the sink's first
		// block, never caught up.)
		play := func() { go func() { _ = snd.srv.Play(b.Context(), clk) }() }
		own := ownLatency(b, snd.srv, ownClicks, play)
		ownP50 := spacesdtest.Percentile(own, 50)
		// The clicks on the monitor during the flashes too: how far the
		// program's own latency moved meanwhile.
		heard := onsetsOnMonitor(b, snd.srv)

		display, dp, c := benchDaemon(b, snd, soundBenchSize)
		xc, win := testWindow(b, c, display, avWindow)
		cx, cy := win.Bounds.X+avWindow/2, win.Bounds.Y+avWindow/2
		r := rtctest.New(b, rtctest.Options{Audio: true})
		var (
			mu           sync.Mutex
			video, sound []seen
		)
		done := decodeAV(b, r, func(img *image.YCbCr, f rtctest.Frame) {
			sr, ok := r.SenderReport(webrtc.RTPCodecTypeVideo)
			s := seen{arrived: f.Arrived, mapped: ok, white: desktoptest.NearRGB(vp8test.RGBAt(img, cx, cy), 0xffffff)}
			if ok {
				s.wall = sr.Wall(f.Timestamp)
			}
			mu.Lock()
			video = append(video, s)
			mu.Unlock()
		}, func(pcm []int16, p rtctest.AudioPacket) {
			sr, ok := r.SenderReport(webrtc.RTPCodecTypeAudio)
			i := onsetIn(pcm)
			s := seen{arrived: p.Arrived, mapped: ok, white: i >= 0}
			if ok {
				s.wall = sr.Wall(p.Timestamp).Add(samplesDur(max(i, 0)))
			}
			mu.Lock()
			sound = append(sound, s)
			mu.Unlock()
		})
		offer(b, dp, r, "?audio=1")
		desktoptest.Eventually(b, "a sender report of each track", func() bool {
			_, v := r.SenderReport(webrtc.RTPCodecTypeVideo)
			_, a := r.SenderReport(webrtc.RTPCodecTypeAudio)
			return v && a
		})

		type flash struct{ played, drawn time.Time }
		var flashes []flash
		for range avFlashes {
			played := time.Now()
			play()
			xc.Fill(desktoptest.Fill{W: avWindow, H: avWindow, RGB: 0xffffff})
			flashes = append(flashes, flash{played, time.Now()})
			time.Sleep(avLit)
			xc.Fill(desktoptest.Fill{W: avWindow, H: avWindow, RGB: 0x000000})
			time.Sleep(avPeriod - time.Since(played))
		}
		time.Sleep(300 * time.Millisecond) // the last on their way
		_ = r.PC.Close()
		onMonitor := heard()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.Fatal("the receiver's tracks did not end after it closed")
		}

		// Each flash's first white frame and first click that arrived
		// after it, before the next: the click placed ownP50 after it was
		// asked for, the flash when the X server had drawn it.
		first := func(xs []seen, from, to time.Time) (seen, bool) {
			for _, x := range xs {
				if x.white && x.mapped && x.arrived.After(from) && x.arrived.Before(to) {
					return x, true
				}
			}
			return seen{}, false
		}
		var skew, byArrival, vDelay, aDelay, ownNow, perClick []time.Duration
		for i, f := range flashes {
			end := f.played.Add(avPeriod)
			if i+1 < len(flashes) {
				end = flashes[i+1].played
			}
			v, okV := first(video, f.played, end)
			a, okA := first(sound, f.played, end)
			if !okV || !okA {
				continue
			}
			at := f.played.Add(ownP50)
			vDelay, aDelay = append(vDelay, v.wall.Sub(f.drawn)), append(aDelay, a.wall.Sub(at))
			skew = append(skew, a.wall.Sub(at)-v.wall.Sub(f.drawn))
			byArrival = append(byArrival, a.arrived.Sub(at)-v.arrived.Sub(f.drawn))
			if j := slices.IndexFunc(onMonitor, func(t time.Time) bool { return t.After(f.played) && t.Before(end) }); j >= 0 {
				ownNow = append(ownNow, onMonitor[j].Sub(f.played))
				perClick = append(perClick, a.wall.Sub(onMonitor[j])-v.wall.Sub(f.drawn))
			}
		}
		if len(skew) == 0 {
			b.Fatalf("no flash was both seen and heard (%d frames, %d audio packets decoded)", len(video), len(sound))
		}
		lookahead := opusLookahead(b)
		p50, p95 := spacesdtest.Percentile(skew, 50), magnitudePercentile(skew, 95)
		fmt.Printf("stream av sync: skew (audio - video) p50 %+.1f ms p95 %+.1f ms over %d flashes (target p50 within ±20 ms, p95 within ±40 ms; Cua's own ~9 ms); the test program's own audio latency %.1f ms taken out\n",
			ms(p50), ms(p95), len(skew), ms(ownP50))
		fmt.Printf("stream av sync: on the sender's clock (RTP timestamps and RTCP sender reports), p50: the flash %.1f ms after it was drawn, the click %.1f ms after it played (Opus's look-ahead, %.1f ms, in it); by arrival alone, the skew p50 %+.1f ms; %s, %d of %d flashes both seen and heard\n",
			ms(spacesdtest.Percentile(vDelay, 50)), ms(spacesdtest.Percentile(aDelay, 50)), ms(lookahead), ms(spacesdtest.Percentile(byArrival, 50)), soundBenchSize, len(skew), len(flashes))
		fmt.Printf("stream av sync: the test program's own audio latency (a paplay started per click, from the call to the click's onset on the sink's monitor): before the stream p50 %.1f ms, p5-p95 %.1f-%.1f ms over %d clicks; during the flashes p50 %.1f ms, p5-p95 %.1f-%.1f ms over %d, and with each click's own taken out the skew is p50 %+.1f ms p95 %+.1f ms\n",
			ms(ownP50), ms(spacesdtest.Percentile(own, 5)), ms(spacesdtest.Percentile(own, 95)), len(own),
			ms(spacesdtest.Percentile(ownNow, 50)), ms(spacesdtest.Percentile(ownNow, 5)), ms(spacesdtest.Percentile(ownNow, 95)), len(ownNow),
			ms(spacesdtest.Percentile(perClick, 50)), ms(magnitudePercentile(perClick, 95)))
		b.ReportMetric(ms(p50), "ms-skew-p50")
		b.ReportMetric(ms(p95), "ms-skew-p95")
	}
}

// magnitudePercentile is the value of ds at the p-th percentile of their
// magnitudes, with its sign.
func magnitudePercentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.SortFunc(s, func(a, b time.Duration) int { return int(a.Abs() - b.Abs()) })
	return s[min(len(s)-1, len(s)*p/100)]
}

// opusLookahead is the encoder's algorithmic delay, which the decoded
// sound carries.
func opusLookahead(b *testing.B) time.Duration {
	enc, err := opus.NewEncoder(opus.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	return enc.Lookahead()
}

// decodeAV decodes r's video and sound as they come and hands each frame
// and packet on, until r ends; done is closed then.
func decodeAV(b *testing.B, r *rtctest.Receiver, onFrame func(*image.YCbCr, rtctest.Frame), onSound func([]int16, rtctest.AudioPacket)) (done <-chan struct{}) {
	vdec, err := vp8.NewDecoder()
	if err != nil {
		b.Fatal(err)
	}
	adec, err := opus.NewDecoder()
	if err != nil {
		vdec.Close()
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer vdec.Close()
		for f := range r.Frames {
			if img, err := vdec.Decode(f.Data); err == nil && img != nil {
				onFrame(img, f)
			}
		}
	})
	wg.Go(func() {
		defer adec.Close()
		pcm := make([]int16, opus.MaxFrameSamples*opus.Channels)
		for p := range r.Audio {
			if n, err := adec.Decode(p.Payload, pcm); err == nil {
				onSound(pcm[:n*opus.Channels], p)
			}
		}
	})
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}
