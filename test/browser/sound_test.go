package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/opus/opustest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

const (
	// toneLength is how long each tone plays: long enough for several
	// samples of the page's stats (each a DevTools round trip on a loaded
	// 2-core machine) while it plays.
	toneLength = 3 * time.Second
	// toneTimeout bounds one tone's playing (paplay's start, the tone,
	// its drain).
	toneTimeout = 30 * time.Second
	// afterTone is how long the samples go on after paplay returns: the
	// last packets on their way, and the receiver's jitter buffer.
	afterTone = 500 * time.Millisecond
	// sampleEvery paces the samples of the page while a tone plays.
	sampleEvery = 100 * time.Millisecond
	// A half-scale sine's RMS is 0.35: the meter reads far above loud
	// while it plays; quiet is DTX's silence (comfort noise at most).
	loudLevel  = 0.05
	quietLevel = 0.01
	// minTonePackets is the least of the audio packets a tone brings
	// (Opus in 20 ms frames: 50 a second, toneLength's 150).
	minTonePackets = 50
)

// audioStats is what getStats says of the page's inbound audio.
type audioStats struct {
	Found            bool    `json:"found"`
	PacketsReceived  int     `json:"packetsReceived"`
	AudioLevel       float64 `json:"audioLevel"`
	TotalAudioEnergy float64 `json:"totalAudioEnergy"`
	SamplesDuration  float64 `json:"totalSamplesDuration"`
	SamplesReceived  int     `json:"totalSamplesReceived"`
	ConcealedSamples int     `json:"concealedSamples"`
	// Level is the page's own meter (body's data-sound-level, the RMS of
	// the decoded samples; -1 before it measured anything).
	Level float64 `json:"level"`
}

// audioStatsExpr reads audioStats on the page's latest peer connection.
const audioStatsExpr = `(async () => {
	const out = { found: false, level: Number(document.body.dataset.soundLevel ?? -1) };
	const pc = window.__test.pcs.at(-1);
	if (!pc) return out;
	(await pc.getStats()).forEach((s) => {
		if (s.type === 'inbound-rtp' && s.kind === 'audio') {
			Object.assign(out, { found: true, packetsReceived: s.packetsReceived || 0, audioLevel: s.audioLevel || 0,
				totalAudioEnergy: s.totalAudioEnergy || 0, totalSamplesDuration: s.totalSamplesDuration || 0,
				totalSamplesReceived: s.totalSamplesReceived || 0, concealedSamples: s.concealedSamples || 0 });
		}
	});
	return out;
})()`

func (p *page) audioStats() audioStats {
	p.t.Helper()
	return value[audioStats](p, audioStatsExpr)
}

// whileTone plays a tone of freqHz into srv for toneLength and samples
// the page's audio every sampleEvery from its start until afterTone past
// its end: the samples, and the one just before it started.
func whileTone(t *testing.T, p *page, srv *audiotest.Server, freqHz float64) (before audioStats, during []audioStats) {
	t.Helper()
	before = p.audioStats()
	ctx, cancel := context.WithTimeout(t.Context(), toneTimeout)
	defer cancel()
	played := make(chan error, 1)
	go func() { played <- srv.PlayTone(ctx, freqHz, toneLength) }()
	var end <-chan time.Time
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		during = append(during, p.audioStats())
		select {
		case err := <-played:
			if err != nil {
				t.Fatalf("play a %v Hz tone: %v\n%s", freqHz, err, srv.Log())
			}
			end = time.After(afterTone)
		case <-end:
			return before, during
		case <-tick.C:
		}
	}
}

// loudest is the greatest of f over samples.
func loudest(samples []audioStats, f func(audioStats) float64) float64 {
	m := 0.0
	for _, s := range samples {
		m = max(m, f(s))
	}
	return m
}

// describe tells what the samples of a tone saw, from before it.
func describe(before audioStats, during []audioStats) string {
	last := during[len(during)-1]
	return fmt.Sprintf("packetsReceived %d -> %d, totalAudioEnergy %.4g -> %.4g, audioLevel up to %.3f, totalSamplesDuration %.2f -> %.2f s, concealedSamples %d of %d, level meter up to %.3f",
		before.PacketsReceived, last.PacketsReceived, before.TotalAudioEnergy, last.TotalAudioEnergy,
		loudest(during, func(s audioStats) float64 { return s.AudioLevel }), before.SamplesDuration, last.SamplesDuration,
		last.ConcealedSamples, last.SamplesReceived, loudest(during, func(s audioStats) float64 { return s.Level }))
}

// clickSound clicks the page's #sound button where it is drawn, as a
// person would (a gesture the page may start its WebAudio from).
func (p *page) clickSound() {
	p.t.Helper()
	r := value[[]float64](p, `(() => {
		const r = document.getElementById('sound').getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height];
	})()`)
	if r[2] == 0 || r[3] == 0 {
		p.t.Fatalf("the sound button is not drawn (%v x %v)", r[2], r[3])
	}
	p.click(r[0], r[1], "left", 1)
}

// TestViewerPlaysTheSound: with a real PulseAudio (a null sink) beside
// the desktop, a viewer link with the sound (StreamOptions.Audio) opens a
// page that offers to receive audio, shows the picture and, muted as a
// browser requires before a gesture, a "Click for sound" button. While a
// 440 Hz tone plays into the sink, getStats shows the inbound audio's
// packets growing and its samples decoded. A click on the button unmutes
// the video and leaves the keyboard with the Space; while the tone plays
// again, getStats shows its energy (totalAudioEnergy, audioLevel: above
// zero only unmuted, Chromium measuring after the element's volume) and
// the page's level meter (a WebAudio analyser of the stream) reads loud,
// then quiet once it stopped; a second click mutes. A link without the
// sound opens a page whose offer has no audio section and that never
// shows the button.
func TestViewerPlaysTheSound(t *testing.T) {
	vp8test.Require(t)
	opustest.Require(t)
	srv := audiotest.StartPulse(t) // audiotest.Require: PulseAudio and paplay
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display, Stream: streamsvc.Options{Audio: audio.Options{Server: srv.Addr}}})
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []api.Feature{api.FeatureDesktopStream, api.FeatureDesktopAudio} {
		if ok, lim := caps.Supports(f); !ok {
			t.Fatalf("%s unsupported: %s", f, lim)
		}
	}
	e := &env{display: display, d: d, b: startBrowser(t)}
	_, win := e.showWindow(t, 200, 200, quarters)

	ep, err := d.Client.StreamEndpoint(t.Context(), api.TicketRequest{}, api.StreamOptions{Audio: true})
	if err != nil {
		t.Fatalf("stream endpoint with audio: %v", err)
	}
	if !strings.Contains(ep.OfferURL, api.QueryAudio+"=1") {
		t.Fatalf("offer URL %s does not ask for the sound", ep.OfferURL)
	}
	p := e.b.newPage(t, 800, 600, 1)
	p.connect(ep.ViewerURL)
	p.waitFills("the window's colours in the video", win.Bounds.X, win.Bounds.Y, quarters)
	if !value[bool](p, `/^m=audio .*/m.test(window.__test.pcs.at(-1).localDescription.sdp)`) {
		t.Fatal("the page's offer has no audio section, its link asking for the sound")
	}
	p.waitFor(`the "Click for sound" button`, `(() => {
		const b = document.getElementById('sound');
		return document.body.dataset.sound === 'off' && !b.hidden && b.textContent === 'Click for sound' &&
			document.getElementById('video').muted;
	})()`)
	p.waitFor("the audio track's stats", `(async () => {
		const pc = window.__test.pcs.at(-1);
		let found = false;
		(await pc.getStats()).forEach((s) => { found = found || (s.type === 'inbound-rtp' && s.kind === 'audio'); });
		return found;
	})()`)

	// Muted, before any click: the sound arrives and is decoded all the
	// same. (Chromium measures a received track's energy after the
	// element's volume, so a muted page's reads zero.)
	before, during := whileTone(t, p, srv, 440)
	last := during[len(during)-1]
	t.Logf("getStats of inbound audio, muted, over a %v tone: %s", toneLength, describe(before, during))
	if got := last.PacketsReceived - before.PacketsReceived; got < minTonePackets {
		t.Errorf("%d audio packets received over a %v tone, want %d at least", got, toneLength, minTonePackets)
	}
	if got := last.SamplesDuration - before.SamplesDuration; got < toneLength.Seconds()/2 {
		t.Errorf("%.2f s of audio decoded over a %v tone", got, toneLength)
	}

	// The click: sound on, its energy in getStats, the meter measuring.
	p.clickSound()
	p.waitFor("the sound on", `document.body.dataset.sound === 'on' && !document.getElementById('video').muted`)
	// The keys still go to the Space: a button that kept the focus would
	// take them (Space and Enter would mute it).
	if got := value[string](p, `document.activeElement && document.activeElement.id`); got != "keys" {
		t.Errorf("after the click for sound the focus is on %q, not the Space's keyboard field", got)
	}
	before, during = whileTone(t, p, srv, 440)
	last = during[len(during)-1]
	t.Logf("getStats of inbound audio, sound on, over a %v tone: %s", toneLength, describe(before, during))
	if got := last.PacketsReceived - before.PacketsReceived; got < minTonePackets {
		t.Errorf("%d audio packets received over a %v tone, want %d at least", got, toneLength, minTonePackets)
	}
	if last.TotalAudioEnergy <= before.TotalAudioEnergy || loudest(during, func(s audioStats) float64 { return s.AudioLevel }) <= 0 {
		t.Errorf("no audio energy in getStats over the tone: %s", describe(before, during))
	}
	if l := loudest(during, func(s audioStats) float64 { return s.Level }); l < loudLevel {
		t.Errorf("the level meter read %.4f at most while the tone played, want above %v", l, loudLevel)
	}
	p.waitFor(fmt.Sprintf("the level meter quiet (below %v) after the tone", quietLevel),
		fmt.Sprintf(`Number(document.body.dataset.soundLevel) < %v`, quietLevel))

	p.clickSound()
	p.waitFor("the sound muted", `document.body.dataset.sound === 'muted' && document.getElementById('video').muted`)
	p.noErrors()

	// Without the sound: no audio in the offer, no button.
	silent := e.link(t, api.TicketRequest{})
	q := e.b.newPage(t, 800, 600, 1)
	q.connect(silent.ViewerURL)
	if got := value[string](q, `window.__test.pcs.at(-1).localDescription.sdp`); strings.Contains(got, "m=audio") {
		t.Errorf("the offer of a page without the sound has an audio section:\n%s", got)
	}
	if st := value[string](q, `document.body.dataset.sound + ' ' + document.getElementById('sound').hidden`); st != "none true" {
		t.Errorf("a page without the sound: data-sound and #sound's hidden are %q, want none and hidden", st)
	}
	q.noErrors()
}
