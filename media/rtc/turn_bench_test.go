package rtc_test

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
)

// BenchmarkConnectTURN: what a TURN server (pion/turn, on loopback) adds
// to a viewer's setup beside the direct path: from the answer applied to
// the peer connection connected (ICE, DTLS), and to the first keyframe
// (the keyframe limiter's 100 ms is in both); and the answer's time,
// which holds the Space's TURN allocations.
func BenchmarkConnectTURN(b *testing.B) {
	srv := rtctest.StartTURN(b)
	for _, bc := range []struct {
		name             string
		daemon, receiver string
		relayOnly        bool
	}{
		{"direct", "udp", "udp", false},
		{"turn-udp", "udp", "udp", true},
		{"turn-tcp", "tcp", "tcp", true},
		{"turn-tls", "tls", "tcp", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			udp, _, _, err := rtc.ListenUDP("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer udp.Close()
			e, err := rtc.NewEngine(rtc.Config{UDP: udp})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var answering, connect, first time.Duration
			for b.Loop() {
				r := rtctest.New(b, rtctest.Options{ICEServers: srv.ICEServers(bc.receiver), RelayOnly: bc.relayOnly})
				connected := make(chan struct{})
				r.PC.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
					if s == webrtc.PeerConnectionStateConnected {
						close(connected)
					}
				})
				joined := time.Now()
				v, answer, err := e.Join(b.Context(), rtc.Target{Key: "still", Open: func() (rtc.Source, error) { return newStill(64, 48), nil }}, r.Offer,
					rtc.ViewerOptions{ICEServers: srv.ICEServers(bc.daemon), RelayOnly: bc.relayOnly, TURNTLS: srv.PinnedTLS()})
				if err != nil {
					b.Fatal(err)
				}
				answering += time.Since(joined)
				start := time.Now()
				r.Accept(b, answer)
				select {
				case <-connected:
				case <-time.After(turnTimeout):
					b.Fatal("never connected")
				}
				connect += time.Since(start)
				r.NextFrame(b, true, turnTimeout)
				first += time.Since(start)
				v.Close()
				_ = r.PC.Close()
			}
			b.ReportMetric(float64(answering.Microseconds())/1000/float64(b.N), "ms-answer")
			b.ReportMetric(float64(connect.Microseconds())/1000/float64(b.N), "ms-connect")
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms-first-frame")
		})
	}
}
