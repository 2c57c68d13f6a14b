package doctor

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"

	opusselftest "github.com/trycua/cua-spacesd/media/opus/selftest"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/vp8/selftest"
)

// SelfTestResult is what `cua-spacesd selftest --json` prints: the
// self-tests' reports, the VP8 encoder's at the top and the Opus
// encoder's under audio, and whether this binary's encoders passed them
// where it runs.
type SelfTestResult struct {
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	// OK says both encoders passed.
	OK bool `json:"ok"`
	// Error says why it failed: the video encoder's failure (no encoder
	// in this build, or a picture that did not decode as encoded), else
	// the audio encoder's.
	Error string `json:"error,omitempty"`
	selftest.Report
	Audio AudioSelfTest `json:"audio"`
}

// AudioSelfTest is the Opus encoder's self-test: tones that must decode at
// their frequency and level, and silence that must turn into DTX.
type AudioSelfTest struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	opusselftest.Report
}

// SelfTestMain is the selftest subcommand: exit 0 when the encoders'
// frames decode as they were encoded, 1 when not or when this build has
// no encoder, 2 on bad usage.
func SelfTestMain(args []string, stdout, stderr io.Writer, version string) int {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cua-spacesd selftest: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ctx := context.Background()
	rep, err := selftest.Run(ctx)
	res := SelfTestResult{Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH, Report: rep}
	if err != nil {
		res.Error = err.Error()
	}
	audio, err := opusselftest.Run(ctx)
	res.Audio = AudioSelfTest{OK: err == nil, Report: audio}
	if err != nil {
		res.Audio.Error = err.Error()
		if res.Error == "" {
			res.Error = "audio: " + res.Audio.Error
		}
	}
	res.OK = res.Error == ""
	return answer(stdout, stderr, "selftest", *asJSON, res, func(w io.Writer) { writeSelfTest(w, res) }, res.OK)
}

func writeSelfTest(w io.Writer, res SelfTestResult) {
	encoder := res.Encoder
	if encoder == "" {
		encoder = "none"
	}
	fmt.Fprintf(w, "cua-spacesd %s selftest (%s/%s): VP8 encoder %s, frames of %dx%d\n\n", res.Version, res.OS, res.Arch, encoder, res.Width, res.Height)
	for _, c := range res.Checks {
		kind := "inter"
		if c.Key {
			kind = "key"
		}
		fmt.Fprintf(w, "  frame %d  %-5s  %-25s %6d B  %-11s  Y %5.1f  U %5.1f  V %5.1f dB\n",
			c.Frame, kind, c.Pattern, c.Bytes, c.Decoder, c.PSNR[0], c.PSNR[1], c.PSNR[2])
	}
	a := res.Audio
	if len(res.Checks) > 0 {
		fmt.Fprintln(w)
	}
	if a.Encoder == "" {
		fmt.Fprintf(w, "Opus encoder none\n")
	} else {
		fmt.Fprintf(w, "Opus encoder %s, %d Hz stereo, 20 ms frames at %d kbit/s\n\n", a.Encoder, a.SampleRate, a.BitrateKbps)
	}
	for _, c := range a.Checks {
		fmt.Fprintf(w, "  %-25s  %-5s  %3d packets %6d B  %7.1f Hz %6.1f dBFS  (sent %.0f Hz %.1f dBFS; %d of %d frames off)\n",
			c.Segment, c.Channel, c.Packets, c.Bytes, c.Got.Hz, c.Got.DBFS, c.Want.Hz, c.Want.DBFS, c.OffFrames, c.Frames)
	}
	if s := a.Silence; s.Packets > 0 {
		fmt.Fprintf(w, "  %-25s  %-5s  %3d packets %6d B  %d of them DTX (not sent)\n", "silence", "both", s.Packets, s.Bytes, s.DTX)
	}
	if res.OK {
		fmt.Fprintf(w, "\nPASS: every frame decodes as it was encoded (each plane at least %.0f dB), every tone at its frequency (within %.0f %%) and level (within %d dB), silence as DTX\n",
			res.MinPSNR, opusselftest.MaxFrequencyError*100, opusselftest.MaxLevelErrorDB)
		return
	}
	fmt.Fprintln(w)
	if res.Error != "audio: "+a.Error {
		fmt.Fprintf(w, "FAIL: %s\n", res.Error)
	}
	if a.Error != "" {
		fmt.Fprintf(w, "FAIL: audio: %s\n", a.Error)
	}
}

// checkEncoder reports the VP8 encoder desktop_stream and window_stream
// need: this build has libvpx linked in, and its frames decode as they
// were encoded (the self-test).
func checkEncoder(ctx context.Context, _ Options) Result {
	if !vp8.Available {
		fix := "use the Linux release build of cua-spacesd, or make build with a C compiler and libvpx-dev installed"
		if runtime.GOOS != "linux" {
			fix = "stream from a Linux Space: its release build has the encoder"
		}
		return Result{Status: Warn, Detail: "desktop_stream and window_stream are unavailable: " + vp8.Limitation, Fix: fix}
	}
	rep, err := selftest.Run(ctx)
	if err != nil {
		return Result{Status: Fail, Detail: "VP8 self-test: " + err.Error(),
			Fix: "report this build of cua-spacesd with the output of cua-spacesd selftest: its encoder does not work on this machine"}
	}
	return Result{Status: Pass, Detail: fmt.Sprintf("VP8 encoder %s, linked in; self-test: %d frames of %dx%d decode as encoded",
		rep.Encoder, rep.Frames, rep.Width, rep.Height)}
}
