package streamsvc_test

import (
	"bufio"
	"cmp"
	"fmt"
	"image"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// The stream benchmarks run the built daemon (make build) as its own
// process, so that its CPU is its own, against Xvfb, with a pion viewer
// in the benchmark process that decodes every frame (libvpx). Each phase
// prints its figure beside the DESIGN §5 target; the comparison (ffmpeg's
// x11grab + libvpx, one thread, realtime) is measured in the same run on
// the same motion. Run with make bench, or:
//
//	go test -run '^$' -bench Stream -benchtime 1x ./spacesd/streamsvc
const (
	benchPhase   = 5 * time.Second // each CPU and fps window
	g2gSamples   = 40
	pliSamples   = 8
	clockTicksHz = 100 // USER_HZ of /proc/<pid>/stat on Linux
	// firstFrameRounds streams are started (and stopped) for the time to
	// the first frame: its median.
	firstFrameRounds = 5
)

func BenchmarkStream1280x720(b *testing.B)  { benchStream(b, 1280, 720, false) }
func BenchmarkStream1920x1080(b *testing.B) { benchStream(b, 1920, 1080, false) }

// BenchmarkStream1920x1080Audio is the same with the sound on (issue 28):
// every viewer asks for it (audio=1), a private PulseAudio plays a tone
// throughout, and the daemon captures and encodes it; no ffmpeg
// comparison (the one without the sound has it).
func BenchmarkStream1920x1080Audio(b *testing.B) { benchStream(b, 1920, 1080, true) }

type daemonProc struct {
	url, token string
	cmd        *exec.Cmd
}

// benchBinEnv names another daemon binary to measure (an older build, to
// compare on the same machine state); default: make build's.
const benchBinEnv = "STREAM_BENCH_BIN"

func startDaemonProc(b *testing.B, display string, args ...string) *daemonProc {
	return startDaemonProcEnv(b, display, nil, args...)
}

// startDaemonProcEnv is startDaemonProc with more of the daemon's
// environment (PULSE_SERVER: the sound server it captures).
func startDaemonProcEnv(b *testing.B, display string, env []string, args ...string) *daemonProc {
	bin, err := filepath.Abs(cmp.Or(os.Getenv(benchBinEnv), "../../bin/cua-spacesd"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%v (run make build first)", err)
	}
	tok := filepath.Join(b.TempDir(), "token")
	os.WriteFile(tok, []byte("bench-token"), 0o600)
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--token-file", tok, "--display", display, "--media-port", "0", "--log-level", "warn"}, args...)...)
	stderr, _ := cmd.StderrPipe()
	cmd.Env = append(append(os.Environ(), "DISPLAY="+display), env...)
	// warn level hides the serving line: ask the kernel for the port instead.
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	var addr string
	desktoptest.Eventually(b, "the daemon listening", func() bool {
		addr = tcpListenAddr(cmd.Process.Pid)
		return addr != ""
	})
	return &daemonProc{url: "http://" + addr, token: "bench-token", cmd: cmd}
}

// tcpListenAddr finds the loopback TCP port a process listens on.
func tcpListenAddr(pid int) string {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 9 && fs[3] == "0A" && inodes[fs[9]] { // LISTEN
			_, port, _ := strings.Cut(fs[1], ":")
			p, _ := strconv.ParseUint(port, 16, 16)
			return "127.0.0.1:" + strconv.Itoa(int(p))
		}
	}
	return ""
}

// cpuSeconds is a process's user+system CPU time so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fs := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(fs[11], 64)
	st, _ := strconv.ParseFloat(fs[12], 64)
	return (u + st) / clockTicksHz
}

// cores measures a process's CPU over d, in cores.
func cores(pid int, d time.Duration) float64 {
	c0, t0 := cpuSeconds(pid), time.Now()
	time.Sleep(d)
	return (cpuSeconds(pid) - c0) / time.Since(t0).Seconds()
}

// decoded is one frame of the viewer, decoded.
type decoded struct {
	img     *image.YCbCr
	arrived time.Time // its last packet arrived
	at      time.Time // decoded
	size    int
	key     bool
}

func benchStream(b *testing.B, w, h int, sound bool) {
	if !vp8.Available {
		b.Skip("no VP8 decoder in this test binary")
	}
	desktoptest.Require(b, "xterm")
	name, path, ro := fmt.Sprintf("%dx%d", w, h), api.PathStreamScreen, rtctest.Options{Audio: sound}
	if sound {
		name, path = name+" with audio", path+"?audio=1"
	}
	for range b.N {
		var snd *benchSound
		if sound {
			snd = startBenchSound(b)
		}
		display, dp, c := benchDaemon(b, snd, fmt.Sprintf("%dx%d", w, h))
		xc, win := testWindow(b, c, display, 100)

		// Time to first frame: from the offer's POST to the first frame
		// decoded, each round a stream started for its viewer (the
		// first viewer of a still screen), with the daemon's account of
		// where the time went.
		starts := firstFrames(b, c, dp, path, ro, firstFrameRounds)
		ttff := medianOf(starts, func(s firstStart) float64 { return s.decoded })

		r := rtctest.New(b, ro)
		dec, err := vp8.NewDecoder()
		if err != nil {
			b.Fatal(err)
		}
		res, err := rtctest.Post(b.Context(), dp.url+path, dp.token, r.Offer)
		if err != nil || res.Status != http.StatusCreated {
			b.Fatalf("offer: %+v, %v", res, err)
		}
		r.Accept(b, res.Answer)
		heard := snd.hear(b, r)
		frames := make(chan decoded, 1024)
		decoding := make(chan struct{})
		defer func() {
			// The decoder is freed once nothing decodes with it: its
			// goroutine ends when the receiver's frames do.
			_ = r.PC.Close()
			<-decoding
			dec.Close()
		}()
		go func() {
			defer close(decoding)
			defer close(frames)
			for f := range r.Frames {
				img, err := dec.Decode(f.Data)
				if err != nil || img == nil {
					continue
				}
				select {
				case frames <- decoded{img: img, arrived: f.Arrived, at: time.Now(), size: len(f.Data), key: f.Key}:
				default:
				}
			}
		}()
		<-frames

		// Idle: one keep-alive a second.
		idle := cores(dp.cmd.Process.Pid, benchPhase)

		// PLI to keyframe (arrival, not decoding: the benchmark's own
		// decoder may lag behind a 1080p stream on a busy machine), and
		// the keyframes' sizes.
		pliRound := func() (pli []time.Duration, keyBytes []int) {
			for range pliSamples {
				time.Sleep(300 * time.Millisecond)
				drain(frames)
				t0 := time.Now()
				if err := r.SendPLI(); err != nil {
					b.Fatal(err)
				}
				deadline := time.After(5 * time.Second)
			key:
				for {
					select {
					case f := <-frames:
						if f.key {
							pli = append(pli, f.arrived.Sub(t0))
							keyBytes = append(keyBytes, f.size)
							break key
						}
					case <-deadline:
						break key
					}
				}
			}
			return pli, keyBytes
		}
		pliIdle, keyIdle := pliRound()

		// Glass to glass: paint colour k at t, find it decoded.
		colours := []uint32{0xff0000, 0x00ff00, 0x0000ff, 0xffff00, 0x00ffff, 0xff00ff, 0xffffff, 0x000000}
		cx, cy := win.Bounds.X+50, win.Bounds.Y+50
		var g2g []time.Duration
		drain(frames)
		for i := range g2gSamples {
			k := colours[i%len(colours)]
			t0 := time.Now()
			xc.Fill(desktoptest.Fill{W: 100, H: 100, RGB: k})
			deadline := time.After(5 * time.Second)
		wait:
			for {
				select {
				case f := <-frames:
					if desktoptest.NearRGB(vp8test.RGBAt(f.img, cx, cy), k) {
						g2g = append(g2g, f.at.Sub(t0))
						break wait
					}
				case <-deadline:
					break wait
				}
			}
			time.Sleep(50 * time.Millisecond)
		}

		// Continuous motion: a terminal scrolling over the whole screen.
		xterm := exec.Command("xterm", "-geometry", fmt.Sprintf("%dx%d+0+0", w/6, h/13), "-e", "sh", "-c", "while :; do ls -lR /usr/share; done")
		xterm.Env = append(os.Environ(), "DISPLAY="+display)
		if err := xterm.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		drain(frames)
		n, bytes := 0, 0
		heard0 := heard.Load()
		m0 := procMetrics(b, dp)
		stop := time.After(benchPhase)
		cpu0, t0 := cpuSeconds(dp.cmd.Process.Pid), time.Now()
	count:
		for {
			select {
			case f := <-frames:
				n++
				bytes += f.size
			case <-stop:
				break count
			}
		}
		elapsed := time.Since(t0).Seconds()
		m1 := procMetrics(b, dp)
		motion := (cpuSeconds(dp.cmd.Process.Pid) - cpu0) / elapsed
		fps := float64(n) / elapsed
		heardRate := float64(heard.Load()-heard0) / elapsed
		kbps := float64(bytes) * 8 / elapsed / 1000
		k0 := procMetrics(b, dp)
		pli, keyBytes := pliRound()
		k1 := procMetrics(b, dp)
		keyEncodeMS := (k1[streamsvc.MetricKeyframeEncodeMicros] - k0[streamsvc.MetricKeyframeEncodeMicros]) /
			max(k1[streamsvc.MetricKeyframes]-k0[streamsvc.MetricKeyframes], 1) / 1000
		_ = r.PC.Close()

		// The comparison, same motion, same run: ffmpeg x11grab + libvpx.
		ffCPU, ffFPS, ffNote := 0.0, 0.0, ""
		if !sound { // the line without the sound has it
			ffCPU, ffFPS, ffNote = ffmpegCores(display, w, h)
		}
		_ = xterm.Process.Kill()
		_ = xterm.Wait()

		p50, p95 := spacesdtest.Percentile(g2g, 50), spacesdtest.Percentile(g2g, 95)
		fmt.Printf("stream %s: fps under motion %.1f (target >= 30 at 1080p)\n", name, fps)
		fmt.Printf("stream %s: CPU per stream under motion %.2f cores (target <= 0.5 at 1080p)\n", name, motion)
		if ffCPU > 0 {
			fmt.Printf("stream %s: comparison, same motion, same run: ffmpeg x11grab+libvpx (1 thread, realtime, cpu-used 8, 30 fps) %.2f cores; %s\n", name, ffCPU, ffNote)
		} else if ffNote != "" {
			fmt.Printf("stream %s: comparison: %s\n", name, ffNote)
		}
		// CPU per frame: the figure a loaded machine moves least (fps and
		// cores both drop when others take the cores), and what 30 fps
		// would cost at that rate.
		if fps > 0 {
			perFrame := motion / fps * 1000
			fmt.Printf("stream %s: CPU per frame sent under motion %.1f ms, %.2f cores at 30 fps", name, perFrame, perFrame*30/1000)
			if ffFPS > 0 {
				ff := ffCPU / ffFPS * 1000
				fmt.Printf("; ffmpeg %.1f ms a frame, %.2f cores at 30 fps", ff, ff*30/1000)
			}
			fmt.Println()
		}
		enc := m1[streamsvc.MetricFrames] - m0[streamsvc.MetricFrames]
		fmt.Printf("stream %s: in the daemon under motion: %.1f captures/s, %.1f frames encoded/s, %.1f ms encode per frame\n", name,
			(m1[streamsvc.MetricCaptures]-m0[streamsvc.MetricCaptures])/elapsed, enc/elapsed, (m1[streamsvc.MetricEncodeMicros]-m0[streamsvc.MetricEncodeMicros])/max(enc, 1)/1000)
		fmt.Printf("stream %s: CPU idle %.3f cores (target ~0)\n", name, idle)
		if sound {
			fmt.Printf("stream %s: the sound under motion: %.1f Opus packets/s heard (a tone playing throughout; 50 is every 20 ms frame)\n", name, heardRate)
		}
		fmt.Printf("stream %s: time to first frame from the offer %.0f ms, median of %d streams started (target <= 150 ms; reference product 21-169 ms)\n", name, ttff, len(starts))
		printStartup(name, starts)
		fmt.Printf("stream %s: glass-to-glass (Go receiver) p50 %.1f ms p95 %.1f ms over %d samples (target p50 <= 25 ms)\n", name, ms(p50), ms(p95), len(g2g))
		fmt.Printf("stream %s: bitrate under motion %.0f kbit/s (congestion control's choice on loopback)\n", name, kbps)
		fmt.Printf("stream %s: still screen: keyframe %.0f KB, PLI to keyframe arrived p50 %.1f ms max %.1f ms (protocol bound 100 ms)\n",
			name, float64(median(keyIdle))/1024, ms(spacesdtest.Percentile(pliIdle, 50)), ms(spacesdtest.Percentile(pliIdle, 100)))
		fmt.Printf("stream %s: keyframe under motion %.0f KB (median of %d), encoded in %.1f ms; PLI to keyframe arrived p50 %.1f ms max %.1f ms (protocol bound 100 ms)\n",
			name, float64(median(keyBytes))/1024, len(keyBytes), keyEncodeMS, ms(spacesdtest.Percentile(pli, 50)), ms(spacesdtest.Percentile(pli, 100)))
		b.ReportMetric(fps, "fps")
		b.ReportMetric(motion, "cores-motion")
		b.ReportMetric(idle, "cores-idle")
		b.ReportMetric(ttff, "ms-first-frame")
		b.ReportMetric(ms(p50), "ms-g2g-p50")
		b.ReportMetric(ms(p95), "ms-g2g-p95")
	}
}

// ffmpegCores runs the comparison of DESIGN §5 for benchPhase (after a
// second of start-up) and answers its CPU in cores and the frames per
// second it encoded, or why it could not.
func ffmpegCores(display string, w, h int) (float64, float64, string) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		return 0, 0, "ffmpeg not installed (apt-get install ffmpeg): no comparison"
	}
	secs := int((benchPhase + time.Second) / time.Second)
	cmd := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-stats", "-f", "x11grab", "-video_size", fmt.Sprintf("%dx%d", w, h), "-framerate", "30",
		"-i", display, "-t", strconv.Itoa(secs), "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-threads", "1", "-b:v", "3M", "-f", "null", "-")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, "ffmpeg failed to start: " + err.Error()
	}
	time.Sleep(time.Second)
	c0, t0 := cpuSeconds(cmd.Process.Pid), time.Now()
	time.Sleep(benchPhase - 200*time.Millisecond)
	c := (cpuSeconds(cmd.Process.Pid) - c0) / time.Since(t0).Seconds()
	_ = cmd.Wait()
	frames := 0
	if i := strings.LastIndex(stderr.String(), "frame="); i >= 0 {
		fmt.Sscanf(strings.TrimLeft(stderr.String()[i+len("frame="):], " "), "%d", &frames)
	}
	fps := float64(frames) / float64(secs)
	return c, fps, fmt.Sprintf("ffmpeg encoded %.1f fps", fps)
}

func drain(ch chan decoded) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// procMetrics reads the metrics of a daemon process.
func procMetrics(b *testing.B, dp *daemonProc) map[string]float64 {
	return spacesdtest.Metrics(b, dp.url, dp.token)
}
