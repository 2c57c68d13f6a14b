package streamsvc_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// firstStart is one stream started for its viewer: the receiver's times
// (ms since it posted its offer) and the daemon's account
// (api.StreamStartup: ms since the offer reached its stream engine).
type firstStart struct {
	answered, arrived, decoded float64
	daemon                     api.StreamStartup
}

// firstFrames starts n streams one after the other, each for a new
// viewer of a screen nobody watches, and times each to its first frame.
func firstFrames(b *testing.B, c *client.Client, dp *daemonProc, path string, ro rtctest.Options, n int) []firstStart {
	var out []firstStart
	for range n {
		r := rtctest.New(b, ro)
		dec, err := vp8.NewDecoder()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := rtctest.Post(b.Context(), dp.url+path, dp.token, r.Offer)
		if err != nil || res.Status != http.StatusCreated {
			b.Fatalf("offer: %+v, %v", res, err)
		}
		fs := firstStart{answered: ms(time.Since(start))}
		r.Accept(b, res.Answer)
		f := r.NextFrame(b, true, 10*time.Second)
		fs.arrived = ms(f.Arrived.Sub(start))
		if img, err := dec.Decode(f.Data); err != nil || img == nil {
			b.Fatalf("the first frame did not decode: %v", err)
		}
		fs.decoded = ms(time.Since(start))
		dec.Close()
		sessions, err := c.StreamSessions(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range sessions {
			if strings.HasSuffix(res.Location, "/"+s.ID) && s.Startup != nil {
				fs.daemon = *s.Startup
			}
		}
		out = append(out, fs)
		if _, err := rtctest.Delete(b.Context(), dp.url, res.Location, dp.token); err != nil {
			b.Fatal(err)
		}
		_ = r.PC.Close()
		desktoptest.Eventually(b, "the stream stopped", func() bool { return procMetrics(b, dp)[streamsvc.MetricStreams] == 0 })
	}
	return out
}

func medianOf(xs []firstStart, f func(firstStart) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)/2]
}

// printStartup prints where a started stream's first frame's time went,
// each step the median of the rounds.
func printStartup(name string, xs []firstStart) {
	m := func(f func(firstStart) float64) float64 { return medianOf(xs, f) }
	ready := 0
	for _, x := range xs {
		if x.daemon.Keyframe == api.KeyframeReady {
			ready++
		}
	}
	fmt.Printf("stream %s: first frame, medians of %d, ms: receiver: answer %.1f, first frame arrived %.1f, decoded %.1f; daemon (from the offer's arrival): answer %.1f, ICE connected %.1f, DTLS connected %.1f, first capture %.1f, keyframe encoded %.1f (%.1f ms encode) ready %d of %d before DTLS, first frame sent %.1f\n",
		name, len(xs), m(func(x firstStart) float64 { return x.answered }), m(func(x firstStart) float64 { return x.arrived }), m(func(x firstStart) float64 { return x.decoded }),
		m(func(x firstStart) float64 { return x.daemon.AnswerMS }), m(func(x firstStart) float64 { return x.daemon.ICEMS }), m(func(x firstStart) float64 { return x.daemon.ConnectedMS }),
		m(func(x firstStart) float64 { return x.daemon.CaptureMS }), m(func(x firstStart) float64 { return x.daemon.KeyframeReadyMS }), m(func(x firstStart) float64 { return x.daemon.KeyframeEncodeMS }),
		ready, len(xs), m(func(x firstStart) float64 { return x.daemon.FirstFrameMS }))
	for i, x := range xs {
		fmt.Printf("stream %s: first frame, round %d: decoded %.1f, arrived %.1f; daemon: %+v\n", name, i+1, x.decoded, x.arrived, x.daemon)
	}
}
