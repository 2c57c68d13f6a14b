package audio_test

import (
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
)

// onset finds the first sample of a sound in frames (over 1000, a
// sixteenth of the click's peak, well above the null sink's silence of
// zeros): the frame it is in and its index there.
func onset(f []int16) (int, bool) {
	for i, v := range f {
		if math.Abs(float64(v)) > 1000 {
			return i / audio.Channels, true
		}
	}
	return 0, false
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkCaptureLatency plays a click with paplay, again and again, and
// measures when the capture sees it: from paplay's start (end to end:
// paplay's own start and buffer, the sink, the monitor, us), and from
// when the capture says it was played (our part, as we estimate it).
func BenchmarkCaptureLatency(b *testing.B) {
	srv := audiotest.StartPulse(b)
	c := open(b, srv)
	click := audiotest.Tone(1000, 30*time.Millisecond, 0.5)
	var endToEnd, ours, player []time.Duration
	pcm := make([]int16, audio.FrameLen)
	for b.Loop() {
		ctx, cancel := context.WithTimeout(b.Context(), 10*time.Second)
		played := make(chan error, 1)
		start := time.Now()
		go func() { played <- srv.Play(ctx, click) }()
		for {
			at, err := c.Read(ctx, pcm)
			if err != nil {
				b.Fatal(err)
			}
			if i, ok := onset(pcm); ok {
				seen := time.Now()
				heard := at.Add(time.Duration(i) * time.Second / audio.SampleRate)
				endToEnd = append(endToEnd, seen.Sub(start))
				ours = append(ours, seen.Sub(heard))
				player = append(player, heard.Sub(start))
				break
			}
		}
		if err := <-played; err != nil {
			b.Fatal(err)
		}
		// Let the click pass before the next.
		for quiet := 0; quiet < 5; {
			if _, err := c.Read(ctx, pcm); err != nil {
				b.Fatal(err)
			}
			if _, loud := onset(pcm); loud {
				quiet = 0
			} else {
				quiet++
			}
		}
		cancel()
	}
	b.ReportMetric(float64(median(endToEnd).Microseconds())/1000, "paplay-to-capture-ms")
	b.ReportMetric(float64(median(ours).Microseconds())/1000, "played-to-read-ms")
	b.ReportMetric(float64(median(player).Microseconds())/1000, "paplay-to-played-ms")
}

// processCPU is the CPU time (user and system) of a process so far.
func processCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command (which may hold spaces) in its
	// parentheses: utime and stime are the 12th and 13th, in clock ticks
	// (100 a second on Linux).
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCaptureSilenceCPU captures 10 s of silence and reports the CPU
// it took, ours (the whole test process: the capture, its reader) and the
// sound server's, as a share of one core.
func BenchmarkCaptureSilenceCPU(b *testing.B) {
	srv := audiotest.StartPulse(b)
	c := open(b, srv)
	pcm := make([]int16, audio.FrameLen)
	const seconds = 10
	for b.Loop() {
		ours, server, start := selfCPU(), processCPU(b, srv.PID()), time.Now()
		for range seconds * time.Second / audio.FrameDuration {
			if _, err := c.Read(b.Context(), pcm); err != nil {
				b.Fatal(err)
			}
		}
		wall := time.Since(start)
		b.ReportMetric(100*float64(selfCPU()-ours)/float64(wall), "capture-cpu-%")
		b.ReportMetric(100*float64(processCPU(b, srv.PID())-server)/float64(wall), "pulseaudio-cpu-%")
	}
	if d := c.Dropped(); d != 0 {
		b.Errorf("%v dropped", d)
	}
}
