package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// callTimeout bounds one DevTools command: a liveness bound for a loaded
// CI machine, not a performance figure.
const callTimeout = 30 * time.Second

// pageTimeout bounds a wait for a state of the page: a liveness bound for
// a loaded 2-core CI machine, not a performance figure. It covers the
// page's longest way to a new connection after a drop: a retry's wait
// (5 s at most), an offer the daemon does not answer (10 s) and a peer
// that does not come up (15 s), with room for a slow browser.
const pageTimeout = 90 * time.Second

// chromiumFlags run Debian's Chromium headless, on loopback only (see
// DESIGN §6): loopback candidates allowed, mDNS hiding of local addresses
// off (one --disable-features list: the last one given wins), nothing
// fetched from the network, sRGB so that colours read back as painted.
// chromedp's allocator adds the rest: --remote-debugging-pipe (its
// transport, so that DevTools needs no socket, and takes no part in the
// network the tests take down) and the first tab's about:blank.
var chromiumFlags = []string{
	"--headless",
	"--no-sandbox", // as root (CI), Chromium's sandbox refuses to start
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-default-apps",
	"--disable-extensions",
	"--disable-breakpad",
	"--disable-dev-shm-usage",
	"--disable-background-timer-throttling",
	"--disable-backgrounding-occluded-windows",
	"--disable-renderer-backgrounding",
	"--disable-features=WebRtcHideLocalIpsWithMdns,Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
	"--allow-loopback-in-peer-connection",
	"--autoplay-policy=no-user-gesture-required",
	"--force-color-profile=srgb",
	"--hide-scrollbars",
	"--mute-audio",
	"--password-store=basic",
	"--use-mock-keychain",
	"--window-size=1280,800",
}

// allocatorFlags are chromiumFlags as options of chromedp's allocator,
// in the same order.
func allocatorFlags() []chromedp.ExecAllocatorOption {
	opts := make([]chromedp.ExecAllocatorOption, 0, len(chromiumFlags))
	for _, f := range chromiumFlags {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasValue {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

// chromiumPath finds Debian's chromium: the test fails under CI=true
// without it (.ci/run installs it), and skips elsewhere.
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "chromium is not installed (apt-get install chromium; the browser tests need it)")
	return ""
}

// browser is one Chromium process, driven by chromedp.
type browser struct {
	// ctx is the browser's first tab: a page is a new tab of it, and its
	// end ends the browser.
	ctx context.Context
}

// browserCloseTimeout bounds a graceful close of the browser at the end
// of a test, after which chromedp kills it.
const browserCloseTimeout = 10 * time.Second

func startBrowser(t testing.TB) *browser { return startBrowserWith(t) }

// startBrowserWith starts the browser with flags beyond chromiumFlags
// ("--name" or "--name=value"): a test's own trust, say.
func startBrowserWith(t testing.TB, extra ...string) *browser {
	t.Helper()
	bin := chromiumPath(t)
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	// chromedp makes the profile (a temporary --user-data-dir) and removes
	// it, once it has killed whatever of the browser's helpers (zygote,
	// renderers, GPU) outlived it; the browser dies with the thread that
	// started it (Pdeathsig).
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Env("HOME=" + dir),
		chromedp.CombinedOutput(logf),
	}, allocatorFlags()...)
	for _, f := range extra {
		if name, value, ok := strings.Cut(strings.TrimPrefix(f, "--"), "="); ok {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp's own complaints go with the browser's log, shown when a
	// test fails (never to the test's log: they can come after its end).
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(func(format string, args ...any) {
		fmt.Fprintf(logf, "chromedp: "+format+"\n", args...)
	}))
	t.Cleanup(func() {
		closeCtx, cancelClose := context.WithTimeout(ctx, browserCloseTimeout)
		_ = chromedp.Cancel(closeCtx) // Browser.close, then a kill if it takes too long
		cancelClose()
		cancel()
		cancelAlloc() // waits until the browser and its output are done
		logf.Close()
		if t.Failed() {
			if out, err := os.ReadFile(logf.Name()); err == nil && len(out) > 0 {
				t.Logf("chromium's log:\n%s", tail(out, 4000))
			}
		}
	})
	if err := firstRun(ctx, cancel); err != nil {
		t.Fatalf("chromium does not answer over its pipe: %v", err)
	}
	return &browser{ctx: ctx}
}

// firstRun starts the browser or the tab of ctx. Its context becomes the
// browser's or the tab's life, so it cannot be one with a deadline:
// callTimeout cancels ctx instead, ending the browser or the tab.
func firstRun(ctx context.Context, cancel context.CancelFunc) error {
	timer := time.AfterFunc(callTimeout, cancel)
	defer timer.Stop()
	return chromedp.Do(ctx)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// page is one tab, with the test's hooks installed before its scripts.
type page struct {
	t      testing.TB
	ctx    context.Context // the tab's
	width  int
	height int

	mu         sync.Mutex
	lines      []string // what the page said on its console, and threw
	exceptions []string
}

// pageHooks run before the page's own scripts: they keep every peer
// connection the page makes (for getStats), the data channels it opens
// (their labels, and whether they are open yet) and each message it
// sends, and any violation of its Content-Security-Policy, in
// window.__test. They observe the page through the browser's own APIs;
// the page has no test mode.
const pageHooks = `(() => {
	const t = { pcs: [], labels: [], channels: [], sent: [], violations: [] };
	const Orig = window.RTCPeerConnection;
	if (Orig) {
		const Wrapped = function (...args) {
			const pc = new Orig(...args);
			t.pcs.push(pc);
			const create = pc.createDataChannel.bind(pc);
			pc.createDataChannel = (label, opts) => {
				t.labels.push(label);
				const ch = create(label, opts);
				t.channels.push({ pc, ch });
				const send = ch.send.bind(ch);
				ch.send = (d) => { t.sent.push([label, String(d)]); return send(d); };
				return ch;
			};
			return pc;
		};
		Wrapped.prototype = Orig.prototype;
		window.RTCPeerConnection = Wrapped;
	}
	document.addEventListener('securitypolicyviolation', (e) => t.violations.push(e.violatedDirective + ' ' + e.blockedURI));
	Object.defineProperty(window, '__test', { value: t });
})();`

// newPage opens a tab of width x height CSS pixels at the device pixel
// ratio dpr (a browser zoom of dpr).
func (b *browser) newPage(t testing.TB, width, height int, dpr float64) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	p := &page{t: t, ctx: ctx}
	console := make(chan struct{})
	t.Cleanup(func() {
		cancel() // closes the tab, and ends its console
		<-console
		if t.Failed() {
			p.mu.Lock()
			t.Logf("the page's console:\n%s", strings.Join(p.lines, "\n"))
			p.mu.Unlock()
		}
	})
	if err := firstRun(ctx, cancel); err != nil {
		close(console)
		t.Fatalf("open a tab: %v", err)
	}
	// The console is kept for the test to check and to show when it
	// fails: what the page logs, and the exceptions it throws.
	messages := chromedp.Console(ctx)
	go func() {
		defer close(console)
		for m, err := range messages {
			if err != nil {
				return
			}
			p.record(m.String(), m.IsException())
		}
	}()
	call(p, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: pageHooks})
	p.resize(width, height, dpr)
	return p
}

func (p *page) record(line string, exception bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
	if exception {
		p.exceptions = append(p.exceptions, line)
	}
}

// call runs a DevTools command in the page's tab, failing the test on
// error.
func call[P, R any](p *page, cmd cdp.Command[P, R], params P) R {
	p.t.Helper()
	return send(p, chromedp.Call[P, R], cmd, params)
}

// callBrowser runs a command of the browser (its Browser domain) for the
// page, failing the test on error.
func callBrowser[P, R any](p *page, cmd cdp.Command[P, R], params P) R {
	p.t.Helper()
	return send(p, chromedp.CallBrowser[P, R], cmd, params)
}

// send runs cmd through via (the tab's or the browser's session) within
// callTimeout.
func send[P, R any](p *page, via func(context.Context, cdp.Command[P, R], P) (R, error), cmd cdp.Command[P, R], params P) R {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, callTimeout)
	defer cancel()
	r, err := via(ctx, cmd, params)
	if err != nil {
		p.t.Fatalf("%s: %v", cmd.Method, err)
	}
	return r
}

// resize sets the page's size in CSS pixels and its device pixel ratio.
func (p *page) resize(width, height int, dpr float64) {
	p.t.Helper()
	p.width, p.height = width, height
	call(p, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(width), Height: int64(height), DeviceScaleFactor: dpr, Mobile: false})
}

// navigate loads url in the tab, not waiting for the page.
func (p *page) navigate(url string) {
	p.t.Helper()
	call(p, cdppage.Navigate, cdppage.NavigateParams{URL: url})
}

// open loads url and waits until the page has run its scripts.
func (p *page) open(url string) {
	p.t.Helper()
	p.navigate(url)
	p.waitFor("the page loaded", `document.readyState === 'complete' && document.body.dataset.state !== 'loading'`)
}

// eval evaluates a JavaScript expression (awaiting a promise) into out
// (nil: the value is dropped).
func (p *page) eval(expr string, out any) error {
	ctx, cancel := context.WithTimeout(p.ctx, callTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		return fmt.Errorf("%s: %w", expr, err)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(v, out)
}

// value evaluates expr, failing the test on error.
func value[T any](p *page, expr string) T {
	p.t.Helper()
	var v T
	if err := p.eval(expr, &v); err != nil {
		p.t.Fatal(err)
	}
	return v
}

// connect opens a viewer link and waits until the page is connected,
// has decoded a frame, and has every data channel of its connection open:
// an input sent before its channel opens is dropped, as a person's click
// would be, so a test that sends one waits for them.
func (p *page) connect(url string) {
	p.t.Helper()
	p.open(url)
	p.waitFor("the viewer connected", `document.body.dataset.state === 'connected'`)
	p.waitFrames("frames decoded", 0)
	p.waitFor("the viewer's data channels open", `(() => {
		const pc = window.__test.pcs.at(-1);
		const chs = window.__test.channels.filter((c) => c.pc === pc);
		return chs.length > 0 && chs.every((c) => c.ch.readyState === 'open');
	})()`)
}

// waitFor polls a boolean expression until it holds. A poll that the
// page's navigation cut short (the viewer reloads itself for a new link)
// is asked again of the new document.
func (p *page) waitFor(what, expr string) {
	p.t.Helper()
	desktoptest.EventuallyWithin(p.t, what, pageTimeout, func() bool {
		var ok bool
		if err := p.eval(expr, &ok); err != nil && !navigatedAway(err) {
			p.t.Fatal(err)
		}
		return ok
	})
}

// navigatedAway tells Chromium's answer to an evaluation whose document
// went away under it (-32000).
func navigatedAway(err error) bool {
	var e *cdproto.Error
	return errors.As(err, &e) && e.Message == "Inspected target navigated or closed"
}

// state is the viewer's connection state (body's data-state).
func (p *page) state() string { return value[string](p, `document.body.dataset.state`) }

// framesDecoded reads getStats of the page's latest peer connection.
func (p *page) framesDecoded() int {
	p.t.Helper()
	return value[int](p, `(async () => {
		const pc = window.__test.pcs.at(-1);
		if (!pc) return 0;
		let n = 0;
		(await pc.getStats()).forEach((s) => { if (s.type === 'inbound-rtp' && s.kind === 'video') n = s.framesDecoded || 0; });
		return n;
	})()`)
}

// waitFrames waits until the page has decoded more than n frames on its
// latest connection.
func (p *page) waitFrames(what string, n int) int {
	p.t.Helper()
	var got int
	desktoptest.EventuallyWithin(p.t, what, pageTimeout, func() bool {
		got = p.framesDecoded()
		return got > n
	})
	return got
}

// pixels reads the video's current frame at stream points (x, y), as
// 0xRRGGBB: a canvas read of what the page decoded.
func (p *page) pixels(points [][2]int) []uint32 {
	p.t.Helper()
	b, _ := json.Marshal(points)
	rgba := value[[][]int](p, `(() => {
		const v = document.getElementById('video');
		const c = new OffscreenCanvas(v.videoWidth, v.videoHeight);
		const ctx = c.getContext('2d', { willReadFrequently: true });
		ctx.drawImage(v, 0, 0);
		return `+string(b)+`.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data));
	})()`)
	out := make([]uint32, len(rgba))
	for i, px := range rgba {
		out[i] = uint32(px[0])<<16 | uint32(px[1])<<8 | uint32(px[2])
	}
	return out
}

// waitFills waits until a canvas read of the video shows each fill's
// colour at its centre, the fills drawn at stream point (x, y).
func (p *page) waitFills(what string, x, y int, fills []desktoptest.Fill) {
	p.t.Helper()
	points := make([][2]int, len(fills))
	for i, f := range fills {
		points[i] = [2]int{x + f.X + f.W/2, y + f.Y + f.H/2}
	}
	var got []uint32
	desktoptest.EventuallyWithin(p.t, what, pageTimeout, func() bool {
		got = p.pixels(points)
		for i, f := range fills {
			if !desktoptest.NearRGB(got[i], f.RGB) {
				return false
			}
		}
		return true
	})
}

// mouse dispatches one mouse event at a page point (CSS pixels).
func (p *page) mouse(typ input.DispatchMouseEventType, x, y float64, button string, clicks int) {
	p.t.Helper()
	params := input.DispatchMouseEventParams{Type: typ, X: x, Y: y, Button: input.MouseButton(button), ClickCount: int64(clicks)}
	if typ == input.DispatchMouseEventTypeMousePressed {
		params.Buttons = map[string]int64{"left": 1, "right": 2, "middle": 4}[button]
	}
	call(p, input.DispatchMouseEvent, params)
}

// click presses and lets go of a button at a page point, count times in
// a row (2: a double click).
func (p *page) click(x, y float64, button string, count int) {
	p.t.Helper()
	p.mouse(input.DispatchMouseEventTypeMouseMoved, x, y, "none", 0)
	for i := 1; i <= count; i++ {
		p.mouse(input.DispatchMouseEventTypeMousePressed, x, y, button, i)
		p.mouse(input.DispatchMouseEventTypeMouseReleased, x, y, button, i)
	}
}

// wheel turns the mouse wheel at a page point by deltaY CSS pixels
// (positive: down). Chromium refuses a mouseWheel without both deltas,
// and cdproto's DispatchMouseEventParams leaves out a zero deltaX
// (omitzero; chromedp/chromedp#491 and #1513), so the event goes through
// the tab's untyped Call with both.
func (p *page) wheel(x, y, deltaY float64) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, callTimeout)
	defer cancel()
	params := map[string]any{"type": input.DispatchMouseEventTypeMouseWheel, "x": x, "y": y, "deltaX": 0, "deltaY": deltaY}
	if err := chromedp.FromContext(ctx).Target.Call(ctx, input.CommandDispatchMouseEvent, params, nil); err != nil {
		p.t.Fatalf("%s: %v", input.CommandDispatchMouseEvent, err)
	}
}

// typeKeys presses and lets go of the key of each character of s on
// chromedp's US keyboard (package kb: letters, digits, punctuation, and
// its named keys such as kb.Enter and kb.Backspace), with opts applied to
// each event. A key's down carries the text it types, as one key press
// of a real keyboard brings the page its keydown and its character at
// once. (chromedp.KeyEvent sends the character as a command of its own, a
// DevTools round trip after the keydown, which the bench would time.) A
// key held with Ctrl, Alt or Meta types no text.
func (p *page) typeKeys(s string, opts ...chromedp.KeyOption) {
	p.t.Helper()
	for _, r := range s {
		events := kb.Encode(r)
		down, up := *events[0], *events[len(events)-1]
		for _, o := range opts {
			o(&down)
			o(&up)
		}
		if len(events) == 3 && down.Modifiers&^int64(kb.ModifierShift) == 0 {
			down.Text, down.UnmodifiedText = events[1].Text, events[1].UnmodifiedText
		} else {
			down.Type = input.DispatchKeyEventTypeRawKeyDown
		}
		call(p, input.DispatchKeyEvent, down)
		call(p, input.DispatchKeyEvent, up)
	}
}

// editCommands is a key option that has the key's down run the browser's
// editing commands (e.g. "paste" for Ctrl+V), as a platform's key
// bindings do; DevTools' key events run none by themselves.
func editCommands(commands ...string) chromedp.KeyOption {
	return func(k *input.DispatchKeyEventParams) {
		if k.Type != input.DispatchKeyEventTypeKeyUp {
			k.Commands = commands
		}
	}
}

// insertText inserts text as an IME or an emoji keyboard commits it.
func (p *page) insertText(s string) {
	p.t.Helper()
	call(p, input.InsertText, input.InsertTextParams{Text: s})
}

// screenshot writes a PNG of the page to path.
func (p *page) screenshot(path string) []byte {
	p.t.Helper()
	shot := call(p, cdppage.CaptureScreenshot, cdppage.CaptureScreenshotParams{Format: cdppage.CaptureScreenshotFormatPng})
	if err := os.WriteFile(path, shot.Data, 0o644); err != nil {
		p.t.Fatal(err)
	}
	return shot.Data
}

// noErrors fails the test for exceptions the page threw and violations
// of its security policy.
func (p *page) noErrors() {
	p.t.Helper()
	p.mu.Lock()
	exc := append([]string(nil), p.exceptions...)
	p.mu.Unlock()
	if len(exc) > 0 {
		p.t.Errorf("the page threw:\n%s", strings.Join(exc, "\n"))
	}
	if v := value[[]string](p, `window.__test.violations`); len(v) > 0 {
		p.t.Errorf("the page broke its Content-Security-Policy: %v", v)
	}
}

// env is a display, a daemon on it, and a browser.
type env struct {
	display string
	d       *spacesdtest.Daemon
	b       *browser
}

func start(t *testing.T, size string) *env {
	t.Helper()
	e := startSpace(t, size)
	e.b = startBrowser(t)
	return e
}

// startSpace is start without the browser.
func startSpace(t *testing.T, size string) *env {
	t.Helper()
	vp8test.Require(t)
	display, d := spacesdtest.StartDesktop(t, size, api.FeatureDesktopStream)
	return &env{display: display, d: d}
}

// link mints a viewer link as cua-bridge view prints it.
func (e *env) link(t *testing.T, req api.TicketRequest) *api.StreamEndpoint {
	t.Helper()
	ep, err := e.d.Client.StreamEndpoint(t.Context(), req, api.StreamOptions{})
	if err != nil {
		t.Fatalf("stream endpoint %+v: %v", req, err)
	}
	return ep
}

// showWindow opens a test X client's window of w x h in fills and waits
// until the daemon lists it on screen.
func (e *env) showWindow(t *testing.T, w, h int, fills []desktoptest.Fill) (*desktoptest.XClient, api.Window) {
	t.Helper()
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, e.display, title, w, h, fills)
	return xc, waitWindow(t, e.d.Client, title)
}

// artifactDir is where the tests keep files for a person to look at:
// $CUA_TEST_ARTIFACTS/browser (CI sets it), else the test's temp dir.
func artifactDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("CUA_TEST_ARTIFACTS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
