package browser_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// The viewer benchmarks: a daemon process (the test binary as one, see
// runDaemon) streams a 1920x1080 Xvfb to the viewer page in headless
// Chromium, and the page's own clock times what it shows, read back over
// DevTools. Each figure is printed beside its DESIGN §5 target. Run with
// make bench, or:
//
//	go test -run '^$' -bench Viewer -benchtime 1x ./test/browser
const (
	g2gSamples    = 40
	photonSamples = 30
	sampleTimeout = 5 * time.Second
)

// benchHooks watch the video frame by frame (requestVideoFrameCallback)
// with a canvas read of the frame being shown, and stamp a frame with its
// presentationTime: when Chromium handed it, decoded, to the compositor,
// the last moment a page can observe. (Its expectedDisplayTime would be
// the glass, but headless Chromium has no display, and its estimate jumps
// by hundreds of milliseconds either way; a real display adds at most one
// refresh, 16.7 ms at 60 Hz.)
//   - g: the first frame whose pixel (x, y) is near the colour want, on the
//     wall clock (timeOrigin + a performance time);
//   - i: the first frame whose region (x, y, w, h) differs from the one it
//     was armed on, relative to the keydown before it.
const benchHooks = `(() => {
	const v = document.getElementById('video');
	const px = new OffscreenCanvas(1, 1).getContext('2d', { willReadFrequently: true });
	const g = { want: null, x: 0, y: 0, k: -1, seen: {} };
	const i = { armed: false, key: 0, base: '', rect: [0, 0, 1, 1], seen: [] };
	const region = (src) => {
		const [x, y, w, h] = i.rect;
		const c = new OffscreenCanvas(w, h).getContext('2d', { willReadFrequently: true });
		c.drawImage(src, x, y, w, h, 0, 0, w, h);
		const d = c.getImageData(0, 0, w, h).data;
		let s = 0;
		for (let j = 0; j < d.length; j += 4) s = (s * 31 + d[j] + d[j + 1] * 3 + d[j + 2] * 7) | 0;
		return String(s);
	};
	const near = (d, c) => Math.abs(d[0] - c[0]) <= 32 && Math.abs(d[1] - c[1]) <= 32 && Math.abs(d[2] - c[2]) <= 32;
	window.addEventListener('keydown', (e) => { if (i.armed && !i.key) i.key = e.timeStamp; }, true);
	const frame = (now, meta) => {
		if (g.want) {
			px.drawImage(v, g.x, g.y, 1, 1, 0, 0, 1, 1);
			if (near(px.getImageData(0, 0, 1, 1).data, g.want)) {
				g.seen[g.k] = performance.timeOrigin + meta.presentationTime;
				g.want = null;
			}
		}
		if (i.armed && i.key && region(v) !== i.base) {
			i.seen.push(meta.presentationTime - i.key);
			i.armed = false;
		}
		v.requestVideoFrameCallback(frame);
	};
	v.requestVideoFrameCallback(frame);
	window.__bench = {
		g, i,
		arm(rect) { i.rect = rect; i.base = region(v); i.key = 0; i.armed = true; },
	};
})()`

// wallOffset is the page's wall clock (timeOrigin + now) minus ours, in
// ms, bracketed by the DevTools round trip.
func wallOffset(p *page) float64 {
	p.t.Helper()
	best, off := time.Hour, 0.0
	for range 5 {
		t0 := time.Now()
		pageNow := value[float64](p, `performance.timeOrigin + performance.now()`)
		t1 := time.Now()
		if rt := t1.Sub(t0); rt < best {
			best = rt
			mid := t0.Add(rt / 2)
			off = pageNow - float64(mid.UnixMicro())/1000
		}
	}
	return off
}

func BenchmarkViewerChromium1920x1080(b *testing.B) {
	vp8test.Require(b)
	desktoptest.Require(b, "xterm")
	for range b.N {
		benchViewer(b, 1920, 1080)
	}
}

func benchViewer(b *testing.B, w, h int) {
	rl := startTestRelay(b)
	br := startBrowserWith(b, rl.chromiumFlag)
	display := desktoptest.Start(b, desktoptest.Options{Size: fmt.Sprintf("%dx%d", w, h)})
	tokenFile := filepath.Join(b.TempDir(), "token")
	tok := spacesdtest.Token()
	if err := os.WriteFile(tokenFile, []byte(tok), 0o600); err != nil {
		b.Fatal(err)
	}
	d := startDaemonProcIn(b, display, tokenFile, b.TempDir())
	c, err := client.New(d.url, tok)
	if err != nil {
		b.Fatal(err)
	}
	title := desktoptest.RandomWord(b)
	xc := desktoptest.NewXClient(b, display, title, 100, 100, []desktoptest.Fill{{W: 100, H: 100, RGB: 0x000000}})
	patch := waitWindow(b, c, title)
	term, err := c.LaunchApp(b.Context(), api.LaunchRequest{
		Argv: []string{"xterm", "-T", title + "-term", "-geometry", "40x4", "-e", "/bin/sh", "-c", "exec cat > /dev/null"}, WaitForWindow: true})
	if err != nil {
		b.Fatal(err)
	}
	tw := *term.Window
	time.Sleep(time.Second) // the window manager's drawing settles

	ep, err := c.StreamEndpoint(b.Context(), api.TicketRequest{TTLSeconds: 600}, api.StreamOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// The same Space through cua-relay: its page from the relay's HTTPS,
	// the media relayed by its TURN (the Space gathers relayed candidates
	// only, so no direct path is taken on loopback).
	rl.bridge(b, "space", "add", "dev", d.url, "--token", tok)
	rl.bridge(b, "relay", "register", "dev", "--name", "box")
	relayLink := withOffer(b, rl.bridge(b, "view", "relay:box"), api.QueryICE, api.ICERelay)

	direct := measureViewer(b, br, ep.ViewerURL, api.MediaDirect, w, h, xc, patch, tw)
	turn := measureViewer(b, br, relayLink, api.MediaTURN, w, h, xc, patch, tw)
	direct.print(w, h, "")
	turn.print(w, h, " through cua-relay's TURN")
	// The daemon's account of each page's first frame (both pages still
	// watch, oldest first).
	if sessions, err := c.StreamSessions(b.Context()); err == nil {
		for i, s := range sessions {
			if s.Startup != nil && i < 2 {
				fmt.Printf("viewer %dx%d%s: the daemon's account of its first frame, ms since the offer: %+v\n", w, h, []string{"", " through cua-relay's TURN"}[i], *s.Startup)
			}
		}
	}
	fmt.Printf("viewer %dx%d: TURN adds %.1f ms to glass-to-glass p50 (target <= 5 on loopback) and %.1f ms to input-to-photon p50, same run\n",
		w, h, ms(turn.g50()-direct.g50()), ms(turn.i50()-direct.i50()))
	b.ReportMetric(ms(direct.g50()), "ms-g2g-p50")
	b.ReportMetric(ms(spacesdtest.Percentile(direct.g2g, 95)), "ms-g2g-p95")
	b.ReportMetric(ms(direct.i50()), "ms-input-photon-p50")
	b.ReportMetric(ms(turn.g50()), "ms-g2g-p50-turn")
	b.ReportMetric(ms(turn.i50()), "ms-input-photon-p50-turn")
}

// viewerFigures are what measureViewer took of one link.
type viewerFigures struct {
	g2g, photon []time.Duration
	misses      int
	drift       float64
	rx          rxStats
	open        pageSteps
}

// pageSteps are the page's way to its first frame, in ms since the
// navigation started: the HTML loaded, the DOM ready, then the page's
// own marks (session.js mark).
type pageSteps struct {
	HTML        float64 `json:"html"`
	Scripts     float64 `json:"scripts"`
	DOM         float64 `json:"dom"`
	Script      float64 `json:"script"`
	ICEAsked    float64 `json:"ice-asked"`
	ICEAnswered float64 `json:"ice-answered"`
	OfferSent   float64 `json:"offer-sent"`
	Answered    float64 `json:"answered"`
	Connected   float64 `json:"connected"`
	FirstFrame  float64 `json:"first-frame"`
}

const pageStepsJS = `(() => {
	const n = performance.getEntriesByType('navigation')[0] || {};
	const out = { html: n.responseEnd || 0, dom: n.domContentLoadedEventEnd || 0, scripts: 0 };
	for (const r of performance.getEntriesByType('resource')) {
		if (r.name.endsWith('.js') || r.name.endsWith('.css')) {
			out.scripts = Math.max(out.scripts, r.responseEnd);
		}
	}
	for (const m of performance.getEntriesByType('mark')) {
		if (m.name.startsWith('cua:')) {
			out[m.name.slice(4)] = m.startTime;
		}
	}
	return out;
})()`

func (f viewerFigures) g50() time.Duration { return spacesdtest.Percentile(f.g2g, 50) }
func (f viewerFigures) i50() time.Duration { return spacesdtest.Percentile(f.photon, 50) }

func (f viewerFigures) print(w, h int, via string) {
	g2g, photon, misses, drift, rx := f.g2g, f.photon, f.misses, f.drift, f.rx
	g50, g95 := spacesdtest.Percentile(g2g, 50), spacesdtest.Percentile(g2g, 95)
	i50, i95 := spacesdtest.Percentile(photon, 50), spacesdtest.Percentile(photon, 95)
	fmt.Printf("viewer %dx%d%s: glass-to-glass in Chromium p50 %.1f ms p95 %.1f ms over %d samples, %d missed (target p50 <= 60 ms at 1080p); to the frame handed to the compositor, a display adding at most one refresh (16.7 ms at 60 Hz); clocks drifted %.2f ms meanwhile\n",
		w, h, via, ms(g50), ms(g95), len(g2g), misses, drift)
	fmt.Printf("viewer %dx%d%s: input-to-photon in Chromium p50 %.1f ms p95 %.1f ms over %d keys of %d (target p50 <= 35 ms; the reference product 34-36 ms); from the page's keydown to the frame handed to the compositor, likewise\n",
		w, h, via, ms(i50), ms(i95), len(photon), photonSamples)
	o := f.open
	fmt.Printf("viewer %dx%d%s: the page, from navigation to the first frame shown %.0f ms (target <= 500 ms): HTML loaded %.0f, scripts and style loaded %.0f, script ran %.0f, DOM ready %.0f, ICE servers asked %.0f and answered %.0f, offer sent %.0f, answered %.0f, connected %.0f, first frame %.0f\n",
		w, h, via, o.FirstFrame, o.HTML, o.Scripts, o.Script, o.DOM, o.ICEAsked, o.ICEAnswered, o.OfferSent, o.Answered, o.Connected, o.FirstFrame)
	fmt.Printf("viewer %dx%d%s: Chromium's share of a frame meanwhile (getStats, mean of %d frames): receive to decoded %.1f ms, of which the jitter buffer %.1f ms and decoding %.1f ms\n",
		w, h, via, int(rx.FramesDecoded), rx.per(rx.TotalProcessingDelay, rx.FramesDecoded), rx.per(rx.JitterBufferDelay, rx.JitterBufferEmittedCount), rx.per(rx.TotalDecodeTime, rx.FramesDecoded))
}

// measureViewer opens link in a page of br and measures glass to glass
// (colours painted in xc's window at patch) and input to photon (keys
// typed into the xterm tw).
// The media must have taken the path media (api.MediaDirect or MediaTURN),
// as the page's overlay says it.
func measureViewer(b *testing.B, br *browser, link, media string, w, h int, xc *desktoptest.XClient, patch, tw api.Window) viewerFigures {
	p := br.newPage(b, w, h, 1)
	p.connect(link)
	p.waitFor("the first frame shown", `performance.getEntriesByName('cua:first-frame').length > 0`)
	var steps pageSteps
	if err := p.eval(pageStepsJS, &steps); err != nil {
		b.Fatal(err)
	}
	p.waitFor("the media's path "+media, `document.body.dataset.path === '`+media+`'`)
	p.waitFrames("frames decoded", 10)
	if err := p.eval(benchHooks, nil); err != nil {
		b.Fatal(err)
	}

	// Glass to glass: paint a colour at t0 (the X server has drawn it when
	// Fill returns), find the first frame on the page that shows it.
	colours := []uint32{0xff0000, 0x00ff00, 0x0000ff, 0xffff00, 0x00ffff, 0xff00ff, 0xffffff, 0x000000}
	cx, cy := patch.Bounds.X+50, patch.Bounds.Y+50
	off := wallOffset(p)
	rx0 := receiverStats(p)
	var g2g []time.Duration
	misses := 0
	for k := range g2gSamples {
		col := colours[(k+1)%len(colours)]
		if err := p.eval(fmt.Sprintf(`(() => { const g = window.__bench.g; g.x = %d; g.y = %d; g.k = %d; g.want = [%d, %d, %d]; })()`,
			cx, cy, k, col>>16, col>>8&0xff, col&0xff), nil); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		xc.Fill(desktoptest.Fill{W: 100, H: 100, RGB: col})
		var at float64
		deadline := time.Now().Add(sampleTimeout)
		for at == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			at = value[float64](p, fmt.Sprintf(`window.__bench.g.seen[%d] || 0`, k))
		}
		if at == 0 {
			misses++
			continue
		}
		g2g = append(g2g, time.Duration((at-off-float64(t0.UnixMicro())/1000)*float64(time.Millisecond)))
		time.Sleep(50 * time.Millisecond)
	}
	drift := wallOffset(p) - off
	rx := receiverStats(p).since(rx0)

	// Input to photon: a key pressed in the page (a character, then the
	// BackSpace that erases it, in turn), typed by the daemon into the
	// xterm, drawn there, captured, sent, and seen changed on the page.
	tx, ty := pagePoint(w, h, w, h, tw.Bounds.X+tw.Bounds.Width/2, tw.Bounds.Y+tw.Bounds.Height/2)
	p.click(tx, ty, "left", 1) // the focus to the xterm
	time.Sleep(300 * time.Millisecond)
	// The first text row's first cells, in the xterm's "fixed" 6x13 font.
	rect := fmt.Sprintf("[%d, %d, 60, 13]", tw.Bounds.X+2, tw.Bounds.Y+2)
	var photon []time.Duration
	for k := range photonSamples {
		if err := p.eval(`window.__bench.arm(`+rect+`)`, nil); err != nil {
			b.Fatal(err)
		}
		if k%2 == 0 {
			p.typeKeys("x")
		} else {
			p.typeKeys(kb.Backspace)
		}
		n := 0
		deadline := time.Now().Add(sampleTimeout)
		for n <= len(photon) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			n = value[int](p, `window.__bench.i.seen.length`)
		}
		if n > len(photon) {
			ms := value[float64](p, fmt.Sprintf(`window.__bench.i.seen[%d]`, n-1))
			photon = append(photon, time.Duration(ms*float64(time.Millisecond)))
		}
		time.Sleep(150 * time.Millisecond) // the screen settles between keys
	}

	p.noErrors()
	// The next link measures alone: this page's connection ends.
	p.navigate("about:blank")
	time.Sleep(time.Second)
	return viewerFigures{g2g: g2g, photon: photon, misses: misses, drift: drift, rx: rx, open: steps}
}

// waitWindow waits until the daemon lists the window titled title.
func waitWindow(t testing.TB, c *client.Client, title string) api.Window {
	t.Helper()
	var win api.Window
	desktoptest.Eventually(t, "window "+title+" shown", func() bool {
		ws, err := c.Windows(t.Context(), title)
		if err == nil && len(ws) == 1 && ws[0].OnScreen {
			win = ws[0]
		}
		return win.WindowID != 0
	})
	return win
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// rxStats are the video receiver's counters of getStats (seconds, frames).
type rxStats struct {
	FramesDecoded, JitterBufferEmittedCount                  float64
	TotalDecodeTime, JitterBufferDelay, TotalProcessingDelay float64
}

func receiverStats(p *page) rxStats {
	p.t.Helper()
	return value[rxStats](p, `(async () => {
		let r = {};
		(await window.__test.pcs.at(-1).getStats()).forEach((s) => { if (s.type === 'inbound-rtp' && s.kind === 'video') r = s; });
		return { FramesDecoded: r.framesDecoded || 0, JitterBufferEmittedCount: r.jitterBufferEmittedCount || 0,
			TotalDecodeTime: r.totalDecodeTime || 0, JitterBufferDelay: r.jitterBufferDelay || 0, TotalProcessingDelay: r.totalProcessingDelay || 0 };
	})()`)
}

func (a rxStats) since(b rxStats) rxStats {
	return rxStats{a.FramesDecoded - b.FramesDecoded, a.JitterBufferEmittedCount - b.JitterBufferEmittedCount,
		a.TotalDecodeTime - b.TotalDecodeTime, a.JitterBufferDelay - b.JitterBufferDelay, a.TotalProcessingDelay - b.TotalProcessingDelay}
}

// per is a total of seconds per count, in ms.
func (rxStats) per(total, count float64) float64 {
	if count == 0 {
		return 0
	}
	return total / count * 1000
}
