package rtc_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	xvp8 "golang.org/x/image/vp8"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
)

// turnTimeout bounds what a test waits for over loopback: a liveness
// bound for a loaded machine, not a figure.
const turnTimeout = 20 * time.Second

// still is a source of one grey frame, repeated on request.
type still struct {
	w, h int
	full chan struct{}
}

func newStill(w, h int) *still { return &still{w: w, h: h, full: make(chan struct{}, 1)} }

func (s *still) Next(ctx context.Context) (rtc.Frame, error) {
	select {
	case <-s.full:
	case <-time.After(100 * time.Millisecond):
	case <-ctx.Done():
		return rtc.Frame{}, ctx.Err()
	}
	pix := bytes.Repeat([]byte{0x80, 0x80, 0x80, 0xff}, s.w*s.h)
	return rtc.Frame{Pix: pix, Stride: s.w * 4, Width: s.w, Height: s.h, Full: true}, nil
}

func (s *still) RequestFull() {
	select {
	case s.full <- struct{}{}:
	default:
	}
}

func (s *still) Close() {}

// logBuf is a log that tests read while pion may still write to it.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newEngine is an engine on a loopback UDP port of its own.
func newEngine(t *testing.T) *rtc.Engine {
	t.Helper()
	return newEngineLog(t, nil)
}

// newEngineLog is newEngine whose log (pion's debug lines too) goes to w.
func newEngineLog(t *testing.T, w io.Writer) *rtc.Engine {
	t.Helper()
	vp8test.Require(t)
	udp, _, _, err := rtc.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = udp.Close() })
	cfg := rtc.Config{UDP: udp}
	if w != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e, err := rtc.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// paths collects what OnPath was told.
type paths struct {
	mu  sync.Mutex
	got []api.StreamPath
}

func (p *paths) add(sp api.StreamPath) {
	p.mu.Lock()
	p.got = append(p.got, sp)
	p.mu.Unlock()
}

func (p *paths) last() (api.StreamPath, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) == 0 {
		return api.StreamPath{}, false
	}
	return p.got[len(p.got)-1], true
}

// TestTURN: a viewer given a real TURN server's credential goes direct
// when it can, and through the TURN server, over UDP, TCP and TLS (a
// self-signed certificate, trusted by its pin as a Space trusts its
// relay), when the daemon is told to gather relayed candidates only and
// the receiver sees none of the daemon's others: frames are decoded, the
// receiver's stats show a relayed pair, and the daemon's path message
// and count say so.
func TestTURN(t *testing.T) {
	t.Parallel()
	srv := rtctest.StartTURN(t)
	cases := []struct {
		name      string
		daemon    string // the listener the daemon's end uses
		receiver  string // the receiver's
		relayOnly bool
		media     string
		protocol  string
	}{
		{"direct first", "udp", "udp", false, api.MediaDirect, "udp"},
		{"turn over udp", "udp", "udp", true, api.MediaTURN, "udp"},
		{"turn over tcp", "tcp", "tcp", true, api.MediaTURN, "tcp"},
		{"turn over tls", "tls", "tcp", true, api.MediaTURN, "tcp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuf
			e := newEngineLog(t, &logs)
			before := srv.Allocations(tc.daemon)
			var seen paths
			r := rtctest.New(t, rtctest.Options{Channels: []string{api.ChannelControl},
				ICEServers: srv.ICEServers(tc.receiver), RelayOnly: tc.relayOnly})
			v, answer, err := e.Join(t.Context(), rtc.Target{Key: "still", Open: func() (rtc.Source, error) { return newStill(64, 48), nil }}, r.Offer,
				rtc.ViewerOptions{ICEServers: srv.ICEServers(tc.daemon), RelayOnly: tc.relayOnly, TURNTLS: srv.PinnedTLS(), OnPath: seen.add})
			if err != nil {
				t.Fatalf("join: %v", err)
			}
			defer v.Close()
			// The relayed candidates are gathered beside the UDP mux's
			// host ones, whatever the policy.
			if !strings.Contains(answer, " typ relay") {
				t.Fatalf("the daemon's answer has no relayed candidate:\n%s", answer)
			}
			if !tc.relayOnly && !strings.Contains(answer, " typ host") {
				t.Fatalf("the daemon's answer has no host candidate:\n%s", answer)
			}
			r.Accept(t, answer)
			key := r.NextFrame(t, true, turnTimeout)
			var d xvp8.Decoder
			d.Init(bytes.NewReader(key.Data), len(key.Data))
			if _, err := d.DecodeFrameHeader(); err != nil {
				t.Fatalf("keyframe header: %v", err)
			}
			if img, err := d.DecodeFrame(); err != nil || img.Bounds().Dx() != 64 {
				t.Fatalf("decode the keyframe: %v", err)
			}
			sp := r.WaitPath(t, turnTimeout)
			if sp.Media != tc.media || sp.Protocol != tc.protocol {
				t.Fatalf("the daemon's path message %+v, want media %s over %s", sp, tc.media, tc.protocol)
			}
			if last, ok := seen.last(); !ok || last != sp {
				t.Fatalf("OnPath was told %+v (%v), the viewer %+v", last, ok, sp)
			}
			pair, ok := r.SelectedPair()
			if !ok {
				t.Fatal("the receiver's stats show no selected pair")
			}
			relayed := pair.Local == webrtc.ICECandidateTypeRelay || pair.Remote == webrtc.ICECandidateTypeRelay
			if relayed != (tc.media == api.MediaTURN) {
				t.Fatalf("the receiver's pair %+v, want relayed %v", pair, tc.media == api.MediaTURN)
			}
			if tc.relayOnly {
				if sp.Local != "relay" || pair.Local != webrtc.ICECandidateTypeRelay || pair.Remote != webrtc.ICECandidateTypeRelay {
					t.Fatalf("relay-only: the daemon's path %+v, the receiver's pair %+v: want relay at both ends", sp, pair)
				}
				if srv.Allocations(tc.daemon) == before {
					t.Fatalf("the TURN server's %s listener made no allocation for the daemon", tc.daemon)
				}
				if n := e.TURNViewers(); n != 1 {
					t.Fatalf("TURNViewers %d with one viewer through TURN", n)
				}
			} else if n := e.TURNViewers(); n != 0 {
				t.Fatalf("TURNViewers %d with one direct viewer", n)
			}
			v.Close()
			if n := e.TURNViewers(); n != 0 {
				t.Fatalf("TURNViewers %d after the viewer ended", n)
			}
			log := logs.String()
			if !strings.Contains(log, `level=INFO msg="stream viewer connected" stream=still media=`+tc.media) {
				t.Fatalf("no Info line of the path in the log:\n%s", log)
			}
			if strings.Contains(log, srv.Password) {
				t.Fatal("the TURN password is in the log")
			}
		})
	}
}

// TestTURNRefusals: relay-only without a TURN server is the caller's
// mistake; a TURN server that gives no relayed candidate (a wrong
// credential, a certificate the Space does not trust) ends the offer with
// a clear error rather than an answer that can never connect.
func TestTURNRefusals(t *testing.T) {
	t.Parallel()
	srv := rtctest.StartTURN(t)
	wrong := srv.ICEServers("udp")
	wrong[0].Credential = "not-the-password"
	cases := []struct {
		name string
		o    rtc.ViewerOptions
		kind api.Kind
	}{
		{"no ice server", rtc.ViewerOptions{RelayOnly: true}, api.KindInvalidArgument},
		{"wrong credential", rtc.ViewerOptions{RelayOnly: true, ICEServers: wrong}, api.KindEnv},
		// pion's own TLS trusts the system's roots alone: the self-signed
		// relay is refused without the Space's pin.
		{"tls without the pin", rtc.ViewerOptions{RelayOnly: true, ICEServers: srv.ICEServers("tls")}, api.KindEnv},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			r := rtctest.New(t, rtctest.Options{})
			_, _, err := e.Join(t.Context(), rtc.Target{Key: "still", Open: func() (rtc.Source, error) { return newStill(64, 48), nil }}, r.Offer, tc.o)
			if api.KindOf(err) != tc.kind {
				t.Fatalf("join: %v (kind %s), want kind %s", err, api.KindOf(err), tc.kind)
			}
			if e.Viewers() != 0 {
				t.Fatalf("%d viewers after a refused join", e.Viewers())
			}
		})
	}
}

// TestTURNUnreachableCostsNotTheDirectPath: a TURN server that never
// answers (a UDP port that reads nothing) holds the answer no longer
// than the wait for a relayed candidate (2 s), and the viewer goes
// direct all the same; the log says why it waited.
func TestTURNUnreachableCostsNotTheDirectPath(t *testing.T) {
	t.Parallel()
	hole, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	var logs logBuf
	e := newEngineLog(t, &logs)
	r := rtctest.New(t, rtctest.Options{Channels: []string{api.ChannelControl}})
	start := time.Now()
	v, answer, err := e.Join(t.Context(), rtc.Target{Key: "still", Open: func() (rtc.Source, error) { return newStill(64, 48), nil }}, r.Offer,
		rtc.ViewerOptions{ICEServers: []api.ICEServer{{URLs: []string{"turn:" + hole.LocalAddr().String() + "?transport=udp"}, Username: "u", Credential: "p"}}})
	if err != nil {
		t.Fatalf("join with a TURN server that never answers: %v", err)
	}
	defer v.Close()
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("the answer took %s", took)
	}
	r.Accept(t, answer)
	r.NextFrame(t, true, turnTimeout)
	if sp := r.WaitPath(t, turnTimeout); sp.Media != api.MediaDirect {
		t.Fatalf("path %+v, want direct", sp)
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"the TURN server gave no relayed candidate in time") {
		t.Fatalf("no warning of the wait in the log:\n%s", logs.String())
	}
}

// TestTURNOneTransportBlocked: a Space whose UDP to the TURN server is
// lost (a network that lets only TCP out) answers a relay-only viewer
// once its TCP allocation came, without waiting out the UDP one, and
// the media goes through TURN over TCP.
func TestTURNOneTransportBlocked(t *testing.T) {
	t.Parallel()
	srv := rtctest.StartTURN(t)
	hole, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	ice := srv.ICEServers("tcp")
	ice[0].URLs = append([]string{"turn:" + hole.LocalAddr().String() + "?transport=udp"}, ice[0].URLs...)
	e := newEngine(t)
	r := rtctest.New(t, rtctest.Options{Channels: []string{api.ChannelControl}, ICEServers: srv.ICEServers("udp"), RelayOnly: true})
	start := time.Now()
	v, answer, err := e.Join(t.Context(), rtc.Target{Key: "still", Open: func() (rtc.Source, error) { return newStill(64, 48), nil }}, r.Offer,
		rtc.ViewerOptions{ICEServers: ice, RelayOnly: true})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	defer v.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the answer waited %s for the lost UDP allocation", took)
	}
	r.Accept(t, answer)
	r.NextFrame(t, true, turnTimeout)
	if sp := r.WaitPath(t, turnTimeout); sp.Media != api.MediaTURN || sp.Protocol != "tcp" {
		t.Fatalf("path %+v, want turn over tcp", sp)
	}
}
