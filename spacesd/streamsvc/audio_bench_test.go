package streamsvc_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// The sound's benchmarks (issue 28) run as the stream's do: the built
// daemon as its own process, Xvfb, a pion receiver in the benchmark, and a
// private PulseAudio (a null sink) whose address the daemon gets in
// PULSE_SERVER. Run with make bench, or:
//
//	go test -run '^$' -bench 'AVSync|AudioCPU' -benchtime 1x ./spacesd/streamsvc
const (
	// soundBenchSize is the screen of the sound's benchmarks: the size
	// the stream's targets are set for.
	soundBenchSize = "1920x1080"
	// audioCPUPhase is each CPU window of BenchmarkStreamAudioCPU.
	audioCPUPhase = 4 * time.Second
	// benchToneHz is the tone played where a benchmark wants sound.
	benchToneHz = 440
)

// benchSound is the sound side of a stream benchmark: a private PulseAudio
// the daemon captures. A nil one is a benchmark without sound, and its
// methods do nothing.
type benchSound struct {
	srv *audiotest.Server
}

func startBenchSound(b *testing.B) *benchSound {
	audiotest.Require(b)
	if !opus.Available {
		b.Skip("no Opus decoder in this test binary")
	}
	return &benchSound{srv: audiotest.StartPulse(b)}
}

// env is the daemon's environment for the sound server.
func (s *benchSound) env() []string {
	if s == nil {
		return nil
	}
	return []string{"PULSE_SERVER=" + s.srv.Addr, "PULSE_COOKIE=" + s.srv.Cookie}
}

// require skips the benchmark when the daemon cannot stream the sound
// (a build without libopus, as an older daemon measured for comparison).
func (s *benchSound) require(b *testing.B, caps *api.Capabilities) {
	if s == nil {
		return
	}
	if ok, lim := caps.Supports(api.FeatureDesktopAudio); !ok {
		b.Skipf("bin/cua-spacesd cannot stream the sound: %s", lim)
	}
}

// hear plays a tone into the sink until the benchmark ends and counts
// the Opus packets r receives.
func (s *benchSound) hear(b *testing.B, r *rtctest.Receiver) *atomic.Int64 {
	var n atomic.Int64
	if s == nil {
		return &n
	}
	go func() {
		for range r.Audio {
			n.Add(1)
		}
	}()
	s.tone(b)
	return &n
}

// tone plays benchToneHz into the sink until the benchmark ends.
func (s *benchSound) tone(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = s.srv.PlayTone(ctx, benchToneHz, 10*time.Second)
		}
	})
	b.Cleanup(func() { cancel(); wg.Wait() })
}

// testWindow opens the benchmark's X client, a black window of size x
// size, and answers it once the window manager shows it.
func testWindow(b *testing.B, c *client.Client, display string, size int) (*desktoptest.XClient, api.Window) {
	title := desktoptest.RandomWord(b)
	xc := desktoptest.NewXClient(b, display, title, size, size, []desktoptest.Fill{{W: size, H: size, RGB: 0x000000}})
	var win api.Window
	desktoptest.Eventually(b, "the test window shown", func() bool {
		ws, err := c.Windows(b.Context(), title)
		if err == nil && len(ws) == 1 && ws[0].OnScreen {
			win = ws[0]
		}
		return win.WindowID != 0
	})
	time.Sleep(time.Second) // the window manager's drawing settles
	return xc, win
}

// benchDaemon starts an Xvfb of size and a daemon process on it, with
// snd's PulseAudio (nil: none), skipping the benchmark when it cannot
// stream (or, with snd, stream the sound).
func benchDaemon(b *testing.B, snd *benchSound, size string) (string, *daemonProc, *client.Client) {
	if !vp8.Available {
		b.Skip("no VP8 decoder in this test binary")
	}
	display := desktoptest.Start(b, desktoptest.Options{Size: size})
	dp := startDaemonProcEnv(b, display, snd.env())
	c, err := client.New(dp.url, dp.token)
	if err != nil {
		b.Fatal(err)
	}
	caps, err := c.Capabilities(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	if ok, lim := caps.Supports(api.FeatureDesktopStream); !ok {
		b.Skipf("bin/cua-spacesd cannot stream: %s", lim)
	}
	snd.require(b, caps)
	return display, dp, c
}

// offer connects r to the daemon's screen (query: "?audio=1" for the
// sound too) and answers its session's location.
func offer(b *testing.B, dp *daemonProc, r *rtctest.Receiver, query string) string {
	res, err := rtctest.Post(b.Context(), dp.url+api.PathStreamScreen+query, dp.token, r.Offer)
	if err != nil || res.Status != http.StatusCreated {
		b.Fatalf("offer to %s: %+v, %v", api.PathStreamScreen+query, res, err)
	}
	r.Accept(b, res.Answer)
	return res.Location
}

// watch connects a receiver to the daemon's screen, with the sound when
// sound is set, waits for its first frame, and answers it and its
// session's location. Nothing is decoded: the daemon's CPU is measured.
func watch(b *testing.B, dp *daemonProc, sound bool) (*rtctest.Receiver, string) {
	query := ""
	if sound {
		query = "?audio=1"
	}
	r := rtctest.New(b, rtctest.Options{Audio: sound})
	loc := offer(b, dp, r, query)
	r.NextFrame(b, true, 10*time.Second)
	go func() {
		for range r.Frames {
		}
	}()
	return r, loc
}

// BenchmarkStreamAudioCPU: the daemon's CPU with the sound, beside the
// video's, same daemon, same run: a viewer of a still screen without the
// sound, then under motion (a scrolling xterm); then a viewer with the
// sound while the sink plays silence (every frame captured; once the
// silence settled none encoded or sent) and while it plays a tone (every
// frame encoded and sent).
func BenchmarkStreamAudioCPU(b *testing.B) {
	desktoptest.Require(b, "xterm")
	for range b.N {
		snd := startBenchSound(b)
		display, dp, c := benchDaemon(b, snd, soundBenchSize)
		testWindow(b, c, display, 200)
		pid := dp.cmd.Process.Pid

		r, loc := watch(b, dp, false)
		time.Sleep(time.Second)
		idle := cores(pid, audioCPUPhase)
		xterm := exec.Command("xterm", "-geometry", "320x83+0+0", "-e", "sh", "-c", "while :; do ls -lR /usr/share; done")
		xterm.Env = append(os.Environ(), "DISPLAY="+display)
		if err := xterm.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		motion := cores(pid, audioCPUPhase)
		_ = xterm.Process.Kill()
		_ = xterm.Wait()
		if _, err := rtctest.Delete(b.Context(), dp.url, loc, dp.token); err != nil {
			b.Fatal(err)
		}
		_ = r.PC.Close()
		time.Sleep(time.Second) // the screen still again

		watch(b, dp, true)
		desktoptest.Eventually(b, "the sound captured", func() bool { return procMetrics(b, dp)[streamsvc.MetricAudioFrames] > 25 })
		time.Sleep(time.Second)
		silence := audioPhase(b, dp)
		snd.tone(b)
		time.Sleep(time.Second) // paplay started, the tone flowing
		tone := audioPhase(b, dp)

		fmt.Printf("stream audio CPU %s: video alone, still screen: %.3f cores\n", soundBenchSize, idle)
		fmt.Printf("stream audio CPU %s: video alone, under motion: %.2f cores\n", soundBenchSize, motion)
		for _, p := range []struct {
			what string
			audioPhaseResult
		}{{"silence", silence}, {fmt.Sprintf("a %d Hz tone", benchToneHz), tone}} {
			fmt.Printf("stream audio CPU %s: still screen with one audio listener, %s: %.3f cores, the sound's share %+.3f cores (%.0f frames/s captured, the encoder's time %.2f ms per frame captured, %.1f packets/s sent, %.1f kbit/s)\n",
				soundBenchSize, p.what, p.cores, p.cores-idle, p.frames, p.encodeMS, p.packets, p.kbps)
		}
		b.ReportMetric(idle, "cores-idle")
		b.ReportMetric(motion, "cores-motion")
		b.ReportMetric(silence.cores, "cores-silence")
		b.ReportMetric(tone.cores, "cores-tone")
	}
}

// audioPhaseResult is the daemon's CPU over audioCPUPhase and its
// account of the sound meanwhile, per second.
type audioPhaseResult struct {
	cores, frames, packets, kbps, encodeMS float64
}

func audioPhase(b *testing.B, dp *daemonProc) audioPhaseResult {
	m0, t0 := procMetrics(b, dp), time.Now()
	c := cores(dp.cmd.Process.Pid, audioCPUPhase)
	m1, secs := procMetrics(b, dp), time.Since(t0).Seconds()
	d := func(k string) float64 { return m1[k] - m0[k] }
	return audioPhaseResult{cores: c, frames: d(streamsvc.MetricAudioFrames) / secs, packets: d(streamsvc.MetricAudioPackets) / secs,
		kbps: d(streamsvc.MetricAudioBytes) * 8 / secs / 1000, encodeMS: d(streamsvc.MetricAudioEncodeMicros) / math.Max(d(streamsvc.MetricAudioFrames), 1) / 1000}
}
