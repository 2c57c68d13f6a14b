package browser_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
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
var chromiumFlags = []string{
	"--headless",
	"--no-sandbox", // as root (CI), Chromium's sandbox refuses to start
	"--remote-debugging-pipe",
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
	"about:blank",
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
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI=true requires the browser tests (install it with .ci/run's setup)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	return ""
}

// browser is one Chromium process.
type browser struct {
	t   testing.TB
	cmd *exec.Cmd
	c   *cdp
	log *os.File

	mu    sync.Mutex
	pages map[string]*page // by DevTools session
}

func startBrowser(t testing.TB) *browser {
	t.Helper()
	bin := chromiumPath(t)
	dir := t.TempDir()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--user-data-dir=" + filepath.Join(dir, "profile")}, chromiumFlags...)...)
	// fd 3: the commands Chromium reads; fd 4: what it writes.
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+dir)
	// A process group of its own: its helpers (zygote, renderers, GPU)
	// end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	cmdR.Close()
	outW.Close()
	b := &browser{t: t, cmd: cmd, log: logf, pages: map[string]*page{}}
	b.c = newCDP(cmdW, outR, b.onEvent)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = b.c.call(ctx, "", "Browser.close", nil, nil)
		cancel()
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		// Helpers that outlived the browser itself.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmdW.Close()
		<-b.c.done
		outR.Close()
		logf.Close()
		if t.Failed() {
			if out, err := os.ReadFile(logf.Name()); err == nil && len(out) > 0 {
				t.Logf("chromium's log:\n%s", tail(out, 4000))
			}
		}
	})
	var v struct {
		Product string `json:"product"`
	}
	if err := b.call("", "Browser.getVersion", nil, &v); err != nil {
		t.Fatalf("chromium does not answer over its pipe: %v", err)
	}
	return b
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (b *browser) call(session, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return b.c.call(ctx, session, method, params, out)
}

// onEvent keeps what a page says on its console and the exceptions it
// throws, for the test to check and to show when it fails.
func (b *browser) onEvent(method, session string, params json.RawMessage) {
	b.mu.Lock()
	p := b.pages[session]
	b.mu.Unlock()
	if p == nil {
		return
	}
	switch method {
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		if json.Unmarshal(params, &e) == nil {
			var parts []string
			for _, a := range e.Args {
				if a.Value != nil {
					parts = append(parts, fmt.Sprint(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			p.record("console."+e.Type+": "+strings.Join(parts, " "), false)
		}
	case "Runtime.exceptionThrown":
		var e struct {
			Details struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		if json.Unmarshal(params, &e) == nil {
			p.record("exception: "+e.Details.Text+" "+e.Details.Exception.Description, true)
		}
	}
}

// page is one tab, with the test's hooks installed before its scripts.
type page struct {
	t       testing.TB
	b       *browser
	session string
	width   int
	height  int

	mu         sync.Mutex
	lines      []string
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
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	p := &page{t: t, b: b, session: att.SessionID}
	b.mu.Lock()
	b.pages[p.session] = p
	b.mu.Unlock()
	t.Cleanup(func() {
		_ = b.call("", "Target.closeTarget", map[string]any{"targetId": target.TargetID}, nil)
		b.mu.Lock()
		delete(b.pages, p.session)
		b.mu.Unlock()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("the page's console:\n%s", strings.Join(p.lines, "\n"))
			p.mu.Unlock()
		}
	})
	p.do("Runtime.enable", nil, nil)
	p.do("Page.enable", nil, nil)
	p.do("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": pageHooks}, nil)
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

// do runs a command in the page's session, failing the test on error.
func (p *page) do(method string, params, out any) {
	p.t.Helper()
	if err := p.b.call(p.session, method, params, out); err != nil {
		p.t.Fatal(err)
	}
}

// resize sets the page's size in CSS pixels and its device pixel ratio.
func (p *page) resize(width, height int, dpr float64) {
	p.t.Helper()
	p.width, p.height = width, height
	p.do("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": dpr, "mobile": false}, nil)
}

// open loads url and waits until the page has run its scripts.
func (p *page) open(url string) {
	p.t.Helper()
	p.do("Page.navigate", map[string]any{"url": url}, nil)
	p.waitFor("the page loaded", `document.readyState === 'complete' && document.body.dataset.state !== 'loading'`)
}

// eval evaluates a JavaScript expression (awaiting a promise) into out.
func (p *page) eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("%s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
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

// waitFor polls a boolean expression until it holds.
func (p *page) waitFor(what, expr string) {
	p.t.Helper()
	desktoptest.EventuallyWithin(p.t, what, pageTimeout, func() bool {
		var ok bool
		if err := p.eval(expr, &ok); err != nil {
			p.t.Fatal(err)
		}
		return ok
	})
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
func (p *page) mouse(typ string, x, y float64, button string, clicks int) {
	p.t.Helper()
	params := map[string]any{"type": typ, "x": x, "y": y, "button": button, "clickCount": clicks}
	if typ == "mousePressed" {
		params["buttons"] = map[string]int{"left": 1, "right": 2, "middle": 4}[button]
	}
	p.do("Input.dispatchMouseEvent", params, nil)
}

// click presses and lets go of a button at a page point, count times in
// a row (2: a double click).
func (p *page) click(x, y float64, button string, count int) {
	p.t.Helper()
	p.mouse("mouseMoved", x, y, "none", 0)
	for i := 1; i <= count; i++ {
		p.mouse("mousePressed", x, y, button, i)
		p.mouse("mouseReleased", x, y, button, i)
	}
}

// key is one key as DevTools dispatches it.
type key struct {
	key, code string
	vk        int
	text      string
	modifiers int      // 1 Alt, 2 Ctrl, 4 Meta, 8 Shift
	commands  []string // editing commands the key runs (a paste)
}

// press sends a key down (with its text, as a keyboard would) and up.
func (p *page) press(k key) {
	p.t.Helper()
	down := map[string]any{"type": "keyDown", "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk, "modifiers": k.modifiers}
	if k.text != "" {
		down["text"] = k.text
	} else {
		down["type"] = "rawKeyDown"
	}
	if len(k.commands) > 0 {
		down["commands"] = k.commands
	}
	p.do("Input.dispatchKeyEvent", down, nil)
	p.do("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk, "modifiers": k.modifiers}, nil)
}

// typeASCII types printable ASCII key by key, as a US keyboard would.
func (p *page) typeASCII(s string) {
	p.t.Helper()
	for _, r := range s {
		p.press(asciiKey(r))
	}
}

// asciiKey is the US keyboard's key of a printable ASCII character.
func asciiKey(r rune) key {
	const shifted = `~!@#$%^&*()_+{}|:"<>?`
	const plain = "`1234567890-=[]\\;',./"
	codes := []string{"Backquote", "Digit1", "Digit2", "Digit3", "Digit4", "Digit5", "Digit6", "Digit7", "Digit8", "Digit9", "Digit0",
		"Minus", "Equal", "BracketLeft", "BracketRight", "Backslash", "Semicolon", "Quote", "Comma", "Period", "Slash"}
	k := key{key: string(r), text: string(r)}
	switch {
	case r >= 'a' && r <= 'z':
		k.code, k.vk = "Key"+strings.ToUpper(string(r)), int(r-'a'+'A')
	case r >= 'A' && r <= 'Z':
		k.code, k.vk, k.modifiers = "Key"+string(r), int(r), 8
	case r >= '0' && r <= '9':
		k.code, k.vk = "Digit"+string(r), int(r)
	case r == ' ':
		k.code, k.vk = "Space", 32
	case strings.ContainsRune(plain, r):
		k.code = codes[strings.IndexRune(plain, r)]
	case strings.ContainsRune(shifted, r):
		k.code, k.modifiers = codes[strings.IndexRune(shifted, r)], 8
	}
	return k
}

var (
	keyEnter     = key{key: "Enter", code: "Enter", vk: 13, text: "\r"}
	keyBackspace = key{key: "Backspace", code: "Backspace", vk: 8}
)

// insertText inserts text as an IME or an emoji keyboard commits it.
func (p *page) insertText(s string) {
	p.t.Helper()
	p.do("Input.insertText", map[string]any{"text": s}, nil)
}

// screenshot writes a PNG of the page to path.
func (p *page) screenshot(path string) []byte {
	p.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	p.do("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	b, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		p.t.Fatal(err)
	}
	return b
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
	spacesdtest.RequireEncoder(t)
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
