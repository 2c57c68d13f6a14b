// Package audiotest starts a private PulseAudio for a test and plays
// sounds into it. Each server has its own directories (runtime, state,
// config, cookie, socket) and its own null sink as the default sink, and
// loads nothing else (no X11, D-Bus or device modules), so that many tests
// and daemons on one machine can each run their own at once, as root or as
// any user.
package audiotest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/capabilities/audio/pulseserver"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// The format Play takes: what the capture asks of the server, so that no
// resampling stands between a tone and its measure.
const (
	SampleRate = 48000
	Channels   = 2
)

const (
	// SinkName is the null sink every server has (unless NoSink), its
	// default sink; its monitor is SinkName + ".monitor".
	SinkName = "audiotest"
	// startTimeout bounds the server's start.
	startTimeout = 15 * time.Second
	// playLatency is the buffer paplay asks for, as a player wanting low
	// latency would (paplay's default is 2 s, over which short sounds
	// wait before they start). 20 ms underran while a stream test's
	// daemon and X server took both cores: the tone came with holes.
	playLatency = "100"
)

// Options adjust the server.
type Options struct {
	// NoSink starts the server without any sink: it then has no default
	// sink, as a sound server on a machine without audio devices.
	NoSink bool
}

// Server is a running private PulseAudio (a pulseserver.Server).
type Server struct {
	// Addr is the server's address ("unix:/path"), for PULSE_SERVER or
	// audio.Options.Server.
	Addr string
	// Sink is the default sink's name ("" with NoSink).
	Sink string
	// Cookie is the file of the server's authentication cookie.
	Cookie string

	srv *pulseserver.Server
}

// Require skips the test (fails it under CI=true) when PulseAudio or its
// clients (pulseaudio-utils) are missing.
func Require(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"pulseaudio", "paplay", "pactl"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s is not installed (the audio tests need pulseaudio and pulseaudio-utils)", tool)
		}
	}
}

// StartPulse starts a private PulseAudio with a null sink as its default
// sink, and stops it when the test ends.
func StartPulse(t testing.TB) *Server {
	t.Helper()
	return StartPulseWith(t, Options{})
}

// StartPulseWith is StartPulse with options.
func StartPulseWith(t testing.TB, opts Options) *Server {
	t.Helper()
	Require(t)
	// Not t.TempDir: a unix socket's path must fit in 108 bytes, which a
	// subtest's long name can overflow.
	dir, err := os.MkdirTemp("", "pa")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	so := pulseserver.Options{Sink: SinkName}
	if opts.NoSink {
		so.Sink = ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	srv, err := pulseserver.Start(ctx, dir, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close) // before the directory goes (cleanups run last first)
	return &Server{Addr: srv.Addr, Sink: srv.Sink, Cookie: srv.Cookie, srv: srv}
}

// Env is the environment a client of this server runs in (paplay,
// pactl, a daemon under test): PULSE_SERVER, PULSE_COOKIE, and private
// HOME and XDG_RUNTIME_DIR.
func (s *Server) Env() []string { return s.srv.ClientEnv() }

// PID is the server's process id.
func (s *Server) PID() int { return s.srv.PID() }

// Log is what the server wrote to stderr so far.
func (s *Server) Log() string { return s.srv.Log() }

// Kill kills the server at once (SIGKILL) and waits for it to exit, as a
// sound server that crashes: its clients see the connection drop.
func (s *Server) Kill() { s.srv.Kill() }

// Play plays pcm (interleaved stereo, signed 16-bit at SampleRate) into
// the default sink with paplay, and returns once it has been played.
func (s *Server) Play(ctx context.Context, pcm []int16) error {
	raw := make([]byte, 0, 2*len(pcm))
	for _, v := range pcm {
		raw = binary.LittleEndian.AppendUint16(raw, uint16(v))
	}
	cmd := exec.CommandContext(ctx, "paplay", "--raw", "--format=s16le",
		fmt.Sprintf("--rate=%d", SampleRate), fmt.Sprintf("--channels=%d", Channels),
		"--latency-msec="+playLatency, "--client-name=audiotest")
	cmd.Env = s.Env()
	cmd.Stdin = bytes.NewReader(raw)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("paplay: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// PlayTone plays a sine of freqHz for dur at half of full scale.
func (s *Server) PlayTone(ctx context.Context, freqHz float64, dur time.Duration) error {
	return s.Play(ctx, Tone(freqHz, dur, 0.5))
}

// Pactl runs pactl against the server and answers its output.
func (s *Server) Pactl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "pactl", args...)
	cmd.Env = s.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pactl %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Suspend suspends the default sink (and so its monitor: no audio flows
// from it), or resumes it.
func (s *Server) Suspend(ctx context.Context, suspend bool) error {
	if s.Sink == "" {
		return errors.New("the server has no sink")
	}
	v := "0"
	if suspend {
		v = "1"
	}
	_, err := s.Pactl(ctx, "suspend-sink", s.Sink, v)
	return err
}

// fade is the ramp at each end of a tone: a sine cut off mid-swing is a
// click, heard as every frequency at once.
const fade = 5 * time.Millisecond

// Tone is a sine of freqHz lasting dur, amplitude a fraction of full
// scale, the same on both channels, faded in and out over 5 ms.
func Tone(freqHz float64, dur time.Duration, amplitude float64) []int16 {
	n := int(dur.Seconds() * SampleRate)
	ramp := min(int(fade.Seconds()*SampleRate), n/2)
	out := make([]int16, 0, n*Channels)
	for i := range n {
		g := amplitude
		if edge := min(i, n-1-i); edge < ramp {
			g *= float64(edge) / float64(ramp)
		}
		v := int16(math.Round(g * math.MaxInt16 * math.Sin(2*math.Pi*freqHz*float64(i)/SampleRate)))
		for range Channels {
			out = append(out, v)
		}
	}
	return out
}
