package streamsvc_test

import (
	"bufio"
	"bytes"
	"image"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	xvp8 "golang.org/x/image/vp8"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// frameTimeout bounds the wait for a frame the test caused: a liveness
// bound for a loaded CI machine, not a performance figure (those are in
// the benchmarks).
const frameTimeout = desktoptest.EventTimeout

// requireEncoder skips without libvpx, and fails under CI=true.
func requireEncoder(t testing.TB) {
	t.Helper()
	if vp8.Available {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("this test binary has no VP8 encoder (%s), and CI=true requires it", vp8.Limitation)
	}
	t.Skip("no VP8 encoder in this build")
}

type env struct {
	display string
	d       *spacesdtest.Daemon
	auth    *server.Auth
}

// start runs a display of size and a daemon on it whose token can rotate.
func start(t *testing.T, size string) *env {
	t.Helper()
	requireEncoder(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: size})
	tok := spacesdtest.Token()
	auth := server.NewAuth(tok, nil)
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display, Auth: auth})
	d.Token = tok
	c, err := client.New(d.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	d.Client = c
	// Connect the daemon before any test X client (see desktopsvc's tests).
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []api.Feature{api.FeatureDesktopStream, api.FeatureWindowStream} {
		if ok, lim := caps.Supports(f); !ok {
			t.Fatalf("%s unsupported: %s", f, lim)
		}
	}
	return &env{display: display, d: d, auth: auth}
}

// ticket mints a ticket with the token.
func (e *env) ticket(t *testing.T, req api.TicketRequest) *api.StreamTicket {
	t.Helper()
	tk, err := e.d.Client.StreamTicket(t.Context(), req)
	if err != nil {
		t.Fatalf("mint a ticket %+v: %v", req, err)
	}
	return tk
}

// view connects a receiver to an offer path with a bearer.
func (e *env) view(t *testing.T, path, bearer string, o rtctest.Options) (*rtctest.Receiver, string) {
	t.Helper()
	r := rtctest.New(t, o)
	res, err := rtctest.Post(t.Context(), e.d.URL+path, bearer, r.Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusCreated {
		t.Fatalf("offer to %s: %d %+v", path, res.Status, res.Error)
	}
	if !strings.HasPrefix(res.Location, "/v1/stream/sessions/") {
		t.Fatalf("Location %q", res.Location)
	}
	r.Accept(t, res.Answer)
	return r, res.Location
}

// metric reads one value of the daemon's /metrics.
func (e *env) metric(t *testing.T, name string) int64 {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.d.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s = %q", name, v)
			}
			return int64(f)
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// decodeKey decodes a keyframe with x/image/vp8, the decoder independent
// of the encoder.
func decodeKey(t *testing.T, f rtctest.Frame) *image.YCbCr {
	t.Helper()
	var d xvp8.Decoder
	d.Init(bytes.NewReader(f.Data), len(f.Data))
	if _, err := d.DecodeFrameHeader(); err != nil {
		t.Fatalf("keyframe header: %v", err)
	}
	img, err := d.DecodeFrame()
	if err != nil {
		t.Fatalf("decode the keyframe: %v", err)
	}
	return img
}

// rgbAt converts a decoded BT.601 limited-range pixel to 0xRRGGBB.
func rgbAt(img *image.YCbCr, x, y int) uint32 {
	yy := float64(img.Y[img.YOffset(x, y)]) - 16
	cb := float64(img.Cb[img.COffset(x, y)]) - 128
	cr := float64(img.Cr[img.COffset(x, y)]) - 128
	c := func(v float64) uint32 { return uint32(min(max(v, 0), 255) + 0.5) }
	return c(1.164*yy+1.596*cr)<<16 | c(1.164*yy-0.392*cb-0.813*cr)<<8 | c(1.164*yy+2.017*cb)
}

// near compares colours channel by channel, within what lossy coding of
// a flat area moves them.
func near(a, b uint32) bool {
	for shift := 0; shift <= 16; shift += 8 {
		d := int(a>>shift&0xff) - int(b>>shift&0xff)
		if d < -32 || d > 32 {
			return false
		}
	}
	return true
}

// eventually polls cond (see desktoptest.Eventually).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	desktoptest.Eventually(t, what, cond)
}

func clientWith(url, bearer string) (*client.Client, error) { return client.New(url, bearer) }
