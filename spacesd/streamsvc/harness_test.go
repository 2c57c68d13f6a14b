package streamsvc_test

import (
	"bytes"
	"image"
	"net/http"
	"strings"
	"testing"

	xvp8 "golang.org/x/image/vp8"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// frameTimeout bounds the wait for a frame the test caused: a liveness
// bound for a loaded CI machine, not a performance figure (those are in
// the benchmarks).
const frameTimeout = desktoptest.EventTimeout

type env struct {
	display string
	d       *spacesdtest.Daemon
	auth    *server.Auth
	logs    *spacesdtest.Logs // nil unless the test keeps the daemon's log
}

// start runs a display of size and a daemon on it whose token can rotate.
func start(t *testing.T, size string) *env {
	t.Helper()
	vp8test.Require(t)
	display, d := spacesdtest.StartDesktop(t, size, api.FeatureDesktopStream, api.FeatureWindowStream)
	return &env{display: display, d: d, auth: d.Auth}
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
	v, ok := spacesdtest.Metrics(t, e.d.URL, e.d.Token)[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return int64(v)
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

// eventually polls cond (see desktoptest.Eventually).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	desktoptest.Eventually(t, what, cond)
}

func clientWith(url, bearer string) (*client.Client, error) { return client.New(url, bearer) }
