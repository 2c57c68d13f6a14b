package doctor

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/vp8/selftest"
)

// SelfTestResult is what `cua-spacesd selftest --json` prints: the
// self-test's report, and whether this binary's encoder passed it where it
// runs.
type SelfTestResult struct {
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	OK      bool   `json:"ok"`
	// Error says why it failed: no encoder in this build, or a picture
	// that did not decode as encoded.
	Error string `json:"error,omitempty"`
	selftest.Report
}

// SelfTestMain is the selftest subcommand: exit 0 when the encoder's
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
	rep, err := selftest.Run(context.Background())
	res := SelfTestResult{Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH, OK: err == nil, Report: rep}
	if err != nil {
		res.Error = err.Error()
	}
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
	if res.OK {
		fmt.Fprintf(w, "\nPASS: every frame decodes as it was encoded (each plane at least %.0f dB)\n", res.MinPSNR)
		return
	}
	fmt.Fprintf(w, "\nFAIL: %s\n", res.Error)
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
