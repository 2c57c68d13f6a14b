package streamsvc_test

import (
	"context"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/opus/opustest"
	"github.com/trycua/cua-spacesd/media/opus/selftest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// startWithSound starts a desktop and a daemon whose sound server is
// server ("": one that does not exist).
func startWithSound(t *testing.T, server string) *env {
	t.Helper()
	vp8test.Require(t)
	opustest.Require(t)
	if server == "" {
		server = "unix:" + filepath.Join(t.TempDir(), "no-pulse", "native")
	}
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240"})
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display, Stream: streamsvc.Options{Audio: audio.Options{Server: server}}})
	return &env{display: display, d: d, auth: d.Auth}
}

// listen offers to watch the screen with its sound and answers the
// receiver.
func (e *env) listen(t *testing.T) (*rtctest.Receiver, string) {
	t.Helper()
	return e.view(t, api.PathStreamScreen+"?audio=1", e.d.Token, rtctest.Options{Audio: true})
}

// heardFrame is one received packet's sound, heardFrame, at its RTP timestamp.
type heardFrame struct {
	ts  uint32
	pcm []int16
}

// hear decodes the receiver's audio packets until stop is closed.
func hear(t *testing.T, r *rtctest.Receiver, stop <-chan struct{}) []heardFrame {
	t.Helper()
	dec, err := opus.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var out []heardFrame
	for {
		select {
		case p, ok := <-r.Audio:
			if !ok {
				return out
			}
			pcm := make([]int16, opus.MaxFrameSamples*opus.Channels)
			n, err := dec.Decode(p.Payload, pcm)
			if err != nil {
				t.Errorf("decode a packet of %d bytes: %v", len(p.Payload), err)
				continue
			}
			out = append(out, heardFrame{ts: p.Timestamp, pcm: pcm[:n*opus.Channels]})
		case <-stop:
			return out
		}
	}
}

// toneRuns splits the sound into runs of loud frames of one frequency and
// answers each run's frequency: a quiet frame, a gap in the timestamps
// or a change of frequency ends a run; runs of one tone in a row are one.
// Runs shorter than 50 ms (a tone's edges) are left out.
func toneRuns(frames []heardFrame) []float64 {
	var runs []float64
	var cur []int16
	var prevTS uint32
	prevHz := 0.0
	flush := func() {
		if len(cur) >= opus.SampleRate/20*opus.Channels {
			hz := selftest.Frequency(cur, 0)
			// A tone the machine's load broke in two (a player's
			// underrun) is still one tone.
			if n := len(runs); n > 0 && math.Abs(runs[n-1]-hz) < hz/50 {
				hz = runs[n-1]
				runs = runs[:n-1]
			}
			runs = append(runs, hz)
		}
		cur = nil
	}
	for _, f := range frames {
		loudest := 0
		for i := 0; i < len(f.pcm); i += opus.Channels {
			loudest = max(loudest, int(math.Abs(float64(f.pcm[i]))))
		}
		hz := selftest.Frequency(f.pcm, 0)
		loud := loudest > math.MaxInt16/8
		if len(cur) > 0 && (!loud || f.ts != prevTS+opus.FrameSamples || math.Abs(hz-prevHz) > prevHz/10) {
			flush()
		}
		if loud {
			cur = append(cur, f.pcm...)
		}
		prevTS, prevHz = f.ts, hz
	}
	flush()
	return runs
}

// TestDesktopAudio: with a real PulseAudio (a null sink), desktop_audio is
// supported; a viewer that asks for the sound gets the video as ever and
// an Opus track on which a 440 Hz tone and then an 880 Hz one played into
// the sink arrive in that order, each within 2 %; while nothing plays,
// nothing is encoded or sent once the silence settled. A second listener shares the one capture
// and encoder, and with the last one gone the capture stops.
func TestDesktopAudio(t *testing.T) {
	audiotest.Require(t)
	srv := audiotest.StartPulse(t)
	e := startWithSound(t, srv.Addr)
	caps, err := e.d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok, lim := caps.Supports(api.FeatureDesktopAudio); !ok {
		t.Fatalf("desktop_audio unsupported with a sound server: %s", lim)
	}
	r, loc := e.listen(t)
	r.NextFrame(t, true, frameTimeout) // the picture as ever
	eventually(t, "the sound captured", func() bool { return e.metric(t, streamsvc.MetricAudioFrames) > 25 })
	if got := e.metric(t, streamsvc.MetricAudioListeners); got != 1 {
		t.Fatalf("%d audio listeners, want 1", got)
	}

	// Silence first: once DTX settled, the sink's zeros are neither
	// encoded nor sent.
	eventually(t, "the silence settled", func() bool { return e.metric(t, streamsvc.MetricAudioFrames) > 30 })
	f0, p0, c0 := e.metric(t, streamsvc.MetricAudioFrames), e.metric(t, streamsvc.MetricAudioPackets), e.metric(t, streamsvc.MetricAudioEncodeMicros)
	time.Sleep(time.Second)
	frames, packets := e.metric(t, streamsvc.MetricAudioFrames)-f0, e.metric(t, streamsvc.MetricAudioPackets)-p0
	encode := e.metric(t, streamsvc.MetricAudioEncodeMicros) - c0
	if frames < 25 || packets != 0 || encode != 0 {
		t.Fatalf("a silent second: %d frames captured, %d packets sent, %d us encoding; want some 50 (bursts vary), none sent, none encoded", frames, packets, encode)
	}

	stop := make(chan struct{})
	heard := make(chan []heardFrame, 1)
	go func() { heard <- hear(t, r, stop) }()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := srv.PlayTone(ctx, 440, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := srv.PlayTone(ctx, 880, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the last packets on their way
	close(stop)
	got := <-heard
	slices.SortFunc(got, func(a, b heardFrame) int { return int(int32(a.ts - b.ts)) })
	runs := toneRuns(got)
	if len(runs) != 2 || math.Abs(runs[0]-440) > 440*0.02 || math.Abs(runs[1]-880) > 880*0.02 {
		t.Fatalf("tones heard %v Hz over %d packets; want 440 then 880 (within 2 %%)", runs, len(got))
	}

	// A second listener: the same capture, both counted.
	r2, loc2 := e.listen(t)
	r2.NextFrame(t, true, frameTimeout)
	if got := e.metric(t, streamsvc.MetricAudioListeners); got != 2 {
		t.Fatalf("%d audio listeners, want 2", got)
	}
	for _, l := range []string{loc, loc2} {
		if st, err := rtctest.Delete(t.Context(), e.d.URL, l, e.d.Token); err != nil || st != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d, %v", l, st, err)
		}
	}
	eventually(t, "the sound's capture stopped", func() bool { return e.metric(t, streamsvc.MetricAudioListeners) == 0 })
	n := e.metric(t, streamsvc.MetricAudioFrames)
	time.Sleep(300 * time.Millisecond)
	if again := e.metric(t, streamsvc.MetricAudioFrames); again != n {
		t.Fatalf("frames captured with nobody listening: %d then %d", n, again)
	}
}

// TestDesktopAudioMissing: with no sound server, desktop_audio is
// unsupported with a sentence saying so, an offer with audio=1 answers
// capability_missing, and the same offer without it streams as ever. An
// offer that asks for the sound but has no audio section is
// invalid_argument.
func TestDesktopAudioMissing(t *testing.T) {
	e := startWithSound(t, "")
	caps, err := e.d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ok, lim := caps.Supports(api.FeatureDesktopAudio)
	if ok || lim == "" {
		t.Fatalf("desktop_audio without a sound server: supported %v, limitation %q", ok, lim)
	}
	r := rtctest.New(t, rtctest.Options{Audio: true})
	res, err := rtctest.Post(t.Context(), e.d.URL+api.PathStreamScreen+"?audio=1", e.d.Token, r.Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != api.KindCapabilityMissing.HTTPStatus() || res.Error == nil ||
		res.Error.Kind != api.KindCapabilityMissing || res.Error.Feature != string(api.FeatureDesktopAudio) || res.Error.Limitation != lim {
		t.Fatalf("audio=1 without a sound server: %d %+v", res.Status, res.Error)
	}
	v, _ := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{Audio: true})
	v.NextFrame(t, true, frameTimeout)

	audiotest.Require(t)
	srv := audiotest.StartPulse(t)
	e = startWithSound(t, srv.Addr)
	silent := rtctest.New(t, rtctest.Options{})
	res, err = rtctest.Post(t.Context(), e.d.URL+api.PathStreamScreen+"?audio=1", e.d.Token, silent.Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusBadRequest || res.Error == nil || res.Error.Kind != api.KindInvalidArgument {
		t.Fatalf("audio=1 on an offer without audio: %d %+v", res.Status, res.Error)
	}
	eventually(t, "the refused listener let go of the sound", func() bool { return e.metric(t, streamsvc.MetricAudioListeners) == 0 })
}
