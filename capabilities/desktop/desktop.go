// Package desktop is the X11 desktop capability of cua-spacesd: windows
// (EWMH), screenshots (Composite, MIT-SHM), input (XTEST), the text
// clipboard and launching apps. It is a pure Go X11 client (jezek/xgb, no
// cgo) and is usable without HTTP.
//
// A Desktop connects lazily, on the first call that needs the display, and
// reconnects when the X connection dies, so a daemon started without a
// display costs nothing and one whose X server restarts recovers.
package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/composite"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/trycua/cua-spacesd/api"
)

// Limits and budgets of the X connection.
const (
	// dialTimeout bounds connecting to the display: a dead TCP display
	// must not hang a request.
	dialTimeout = 5 * time.Second
	// redialBackoff keeps a refused display from being dialled on every
	// request of a busy client.
	redialBackoff = 500 * time.Millisecond
)

func init() {
	// xgb logs recoverable noise (no Xauthority entry for the empty
	// display name NewConnNet looks up) to stderr through a package
	// logger; the daemon reports connection errors itself.
	xgb.Logger = log.New(io.Discard, "", 0)
}

// Options configure a Desktop.
type Options struct {
	// Display is the X display (":0"); "" means none.
	Display string
	// Xauthority is the file holding the display's cookie; "" means the
	// X convention, $XAUTHORITY or else $HOME/.Xauthority.
	Xauthority string
	Logger     *slog.Logger
	// Launcher starts the apps of LaunchApp; nil starts them in process
	// groups of their own, outside any process manager.
	Launcher Launcher
}

// Desktop is the desktop of one X display. It is safe for concurrent use.
type Desktop struct {
	display    string
	xauthority string
	log        *slog.Logger
	launcher   Launcher

	// mu guards x, lastErr, lastAt. It is held across a dial, so it is a
	// semaphore: a caller behind a dial to a hung display gives up with
	// its own context.
	mu      semaphore
	x       *xconn
	lastErr error
	lastAt  time.Time

	// input serializes input sequences: two clicks must not interleave
	// their press and release events. A semaphore, not a mutex, so that a
	// call waiting behind a stuck one gives up with its own context.
	input semaphore
	// owed are keys and buttons an abandoned input call may have left
	// pressed; the next input call releases them first. Guarded by input.
	owed held

	// frames are the buffers of one-shot captures and their scaled images
	// (every screenshot but an unscaled PNG).
	frames bufferPool

	// gens counts the generations of window ids (see WindowRef).
	gens atomic.Uint64
}

// New returns a Desktop of the given display; it does not connect yet.
func New(opts Options) *Desktop {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Launcher == nil {
		opts.Launcher = groupLauncher{}
	}
	d := &Desktop{display: opts.Display, xauthority: opts.Xauthority, log: opts.Logger, launcher: opts.Launcher,
		input: newSemaphore(), mu: newSemaphore()}
	d.gens.Store(newGenSeed())
	return d
}

// Display is the display this Desktop uses.
func (d *Desktop) Display() string { return d.display }

// Close drops the X connection, restoring the keyboard map first.
func (d *Desktop) Close() {
	_ = d.mu.acquire(context.Background())
	x := d.x
	d.x = nil
	d.mu.release()
	if x != nil {
		x.close()
	}
}

// conn returns a live connection, dialling one when there is none or the
// last one died. The error is a capability error naming why.
func (d *Desktop) conn(ctx context.Context) (*xconn, error) {
	if d.mu.acquire(ctx) != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, api.Errorf(api.KindTimeout, "X display %s: waiting for another call's connect: %w", d.display, ctx.Err())
		}
		return nil, api.Errorf(api.KindCancelled, "X display %s: waiting for another call's connect: %w", d.display, ctx.Err())
	}
	defer d.mu.release()
	if d.x != nil {
		if d.x.alive() {
			return d.x, nil
		}
		d.log.Warn("X connection lost; reconnecting", "display", d.display)
		// Already dead or broken, so its close does not wait on the server.
		d.x.close()
		d.x = nil
	}
	if d.display == "" {
		return nil, errNoDisplay
	}
	if d.lastErr != nil && time.Since(d.lastAt) < redialBackoff {
		return nil, d.lastErr
	}
	x, err := dial(ctx, d.display, d.xauthority, d.log)
	d.lastAt = time.Now()
	if err != nil {
		// Only the display's own refusal is remembered: a cancelled or
		// timed-out dial says nothing to the next caller.
		var u *unavailable
		if errors.As(err, &u) {
			d.lastErr = err
		}
		return nil, err
	}
	d.lastErr = nil
	d.x = x
	d.log.Info("X display connected", "display", d.display, "xtest", x.hasXTest, "composite", x.hasComposite,
		"damage", x.hasDamage, "shm", x.shm != nil, "wm", x.wm(ctx))
	return x, nil
}

// unavailable is why the display cannot be used at all.
type unavailable struct{ limitation string }

func (u *unavailable) Error() string { return u.limitation }

var errNoDisplay = &unavailable{"no X display: DISPLAY is unset (start cua-spacesd with --display, or --xvfb to run its own)"}

// xconn is one X connection and what was learnt about the display.
type xconn struct {
	failState
	display string
	c       *xgb.Conn
	screen  *xproto.ScreenInfo
	root    xproto.Window
	log     *slog.Logger

	hasXTest     bool
	hasComposite bool
	hasXFixes    bool    // XFixes 2 is there: damage regions, the cursor
	hasDamage    bool    // XDamage and XFixes 2 are there: captures can wait for changes
	shm          *shmSeg // nil when MIT-SHM cannot be used
	wmMu         sync.Mutex
	wmName       string // EWMH window manager's name; "" until one runs

	atomMu sync.Mutex
	atoms  map[string]xproto.Atom

	damageMu   sync.Mutex
	damageSubs map[damage.Damage]*damageTracker

	cursor cursorSubs // the watchers of the cursor's shape

	watch watchedWindows // the windows whose generations it keeps (windowref.go)

	dead chan struct{} // closed when the event loop sees the connection end

	clip *clipboard
	keys *keyboard
}

func dial(ctx context.Context, display, xauthority string, logger *slog.Logger) (*xconn, error) {
	c, sock, err := dialX(ctx, display, xauthority)
	if err != nil {
		return nil, err
	}
	x := &xconn{
		failState: failState{broken: make(chan struct{}), sock: sock},
		display:   display,
		c:         c,
		root:      xproto.Setup(c).DefaultScreen(c).Root,
		log:       logger,
		atoms:     map[string]xproto.Atom{},
		dead:      make(chan struct{}),

		damageSubs: map[damage.Damage]*damageTracker{},
		watch:      watchedWindows{m: map[xproto.Window]*watched{}},
	}
	x.screen = xproto.Setup(c).DefaultScreen(c)
	// The event loop starts after setup, which writes what it reads;
	// replies reach their callers without it, events wait in xgb's queue.
	err = x.setup(ctx)
	go x.eventLoop()
	if err != nil {
		x.close()
		return nil, err
	}
	return x, nil
}

// setup learns what the display offers and creates the clipboard window.
func (x *xconn) setup(ctx context.Context) error {
	err := x.do(ctx, "query extensions", func() error {
		// Extension queries are round trips too: a server stopped right
		// after the handshake must not hang the dial.
		x.hasXTest = xtest.Init(x.c) == nil
		if composite.Init(x.c) == nil {
			if _, err := composite.QueryVersion(x.c, 0, 4).Reply(); err == nil {
				// Automatic redirection keeps every top-level window's own
				// content in a pixmap, so a covered window can still be
				// captured; the server keeps painting the screen itself.
				if err := composite.RedirectSubwindowsChecked(x.c, x.root, composite.RedirectAutomatic).Check(); err == nil {
					x.hasComposite = true
				}
			}
		}
		x.hasXFixes = x.initXFixes()
		x.hasDamage = x.initDamage()
		return nil
	})
	if err != nil {
		return err
	}
	if x.do(ctx, "query MIT-SHM", func() error { return shm.Init(x.c) }) == nil {
		seg, err := newShmSeg(ctx, x, int(x.screen.WidthInPixels)*int(x.screen.HeightInPixels)*4)
		if err != nil {
			if x.brokenErr() != nil || ctx.Err() != nil {
				return err
			}
			x.log.Info("MIT-SHM unusable; screenshots use GetImage", "display", x.display, "err", err)
		} else {
			x.shm = seg
		}
	}
	x.keys = &keyboard{x: x}
	clip, err := newClipboard(ctx, x)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			return err
		}
		return &unavailable{fmt.Sprintf("X display %s: cannot create the clipboard window: %v", x.display, err)}
	}
	x.clip = clip
	return nil
}

func (x *xconn) alive() bool {
	select {
	case <-x.dead:
		return false
	case <-x.broken:
		return false
	default:
		return true
	}
}

// close restores the keyboard map and detaches the shared memory while the
// server answers (each bounded by replyTimeout), then closes the socket and
// waits for the event loop to end, so no goroutine of the connection stays.
func (x *xconn) close() {
	if x.alive() && x.keys != nil {
		x.keys.restoreAll()
	}
	if x.shm != nil {
		x.shm.close(x)
	}
	x.kill()
	<-x.dead
}

// eventLoop dispatches the events the daemon cares about (selection
// traffic) and notices the end of the connection.
func (x *xconn) eventLoop() {
	defer close(x.dead)
	// Destructions are no longer seen: every generation of this
	// connection ends (a new one starts its own).
	defer x.watch.endAll()
	for {
		ev, err := x.c.WaitForEvent()
		if ev == nil && err == nil {
			return
		}
		if err != nil {
			x.log.Debug("X error", "err", err)
			continue
		}
		if x.clip == nil {
			continue // setup failed; the connection is being closed
		}
		switch e := ev.(type) {
		case xproto.SelectionRequestEvent:
			x.clip.onRequest(e)
		case xproto.SelectionClearEvent:
			x.clip.onClear(e)
		case xproto.SelectionNotifyEvent:
			x.clip.onNotify(e)
		case xproto.PropertyNotifyEvent:
			x.clip.onProperty(e)
		case damage.NotifyEvent:
			x.onDamage(e)
		case xfixes.CursorNotifyEvent:
			x.onCursor()
		case xproto.UnmapNotifyEvent:
			x.onWindowGone(e.Window)
		case xproto.DestroyNotifyEvent:
			x.watch.forget(e.Window)
			x.onWindowGone(e.Window)
		}
	}
}

// atom interns name once per connection.
func (x *xconn) atom(ctx context.Context, name string) (xproto.Atom, error) {
	x.atomMu.Lock()
	a, ok := x.atoms[name]
	x.atomMu.Unlock()
	if ok {
		return a, nil
	}
	r, err := await(ctx, x, "intern atom "+name, func() (*xproto.InternAtomReply, error) {
		return xproto.InternAtom(x.c, false, uint16(len(name)), name).Reply()
	})
	if err != nil {
		return 0, err
	}
	x.atomMu.Lock()
	x.atoms[name] = r.Atom
	x.atomMu.Unlock()
	return r.Atom, nil
}

// mustAtom is atom for names used where a failure shows up later anyway.
func (x *xconn) mustAtom(ctx context.Context, name string) xproto.Atom {
	a, _ := x.atom(ctx, name)
	return a
}

// wm returns the EWMH window manager's name, or "" when none runs. A found
// one is remembered; absence is checked again, as the window manager may
// start after the daemon. The lookup runs outside the lock, so a caller
// never waits behind another's round trip beyond its own context.
func (x *xconn) wm(ctx context.Context) string {
	x.wmMu.Lock()
	name := x.wmName
	x.wmMu.Unlock()
	if name != "" {
		return name
	}
	name = x.ewmhWM(ctx)
	x.wmMu.Lock()
	if x.wmName == "" {
		x.wmName = name
	}
	x.wmMu.Unlock()
	return name
}

// ewmhWM returns the name of the EWMH window manager, or "" when none runs.
func (x *xconn) ewmhWM(ctx context.Context) string {
	check, err := x.windowProp(ctx, x.root, "_NET_SUPPORTING_WM_CHECK")
	if err != nil || len(check) == 0 {
		return ""
	}
	name, _ := x.stringProp(ctx, xproto.Window(check[0]), "_NET_WM_NAME")
	if name == "" {
		name = "unnamed"
	}
	return name
}

// screenSize is the root window's size now. RandR (xrandr) can change it
// while the daemon stays connected, so the connection setup's size goes
// stale: captures of it fail with BadMatch and clicks are checked against
// the wrong screen.
func (x *xconn) screenSize(ctx context.Context) (int, int, error) {
	g, err := await(ctx, x, "read the screen size", func() (*xproto.GetGeometryReply, error) {
		return xproto.GetGeometry(x.c, xproto.Drawable(x.root)).Reply()
	})
	if err != nil {
		return 0, 0, err
	}
	return int(g.Width), int(g.Height), nil
}

// sync waits until the server has processed every request sent before it.
func (x *xconn) sync(ctx context.Context) error {
	_, err := await(ctx, x, "sync with the X server", func() (*xproto.GetInputFocusReply, error) {
		return xproto.GetInputFocus(x.c).Reply()
	})
	return err
}

// xerr wraps an X protocol error as kind env (nil stays nil).
func xerr(what string, err error) error {
	if err == nil {
		return nil
	}
	return api.Errorf(api.KindEnv, "%s: %w", what, err)
}

// Status reports each desktop feature's status on this display, connecting
// when needed.
func (d *Desktop) Status(ctx context.Context) map[api.Feature]api.FeatureStatus {
	out := make(map[api.Feature]api.FeatureStatus, len(Features))
	x, err := d.conn(ctx)
	if err != nil {
		for _, f := range Features {
			out[f] = api.FeatureStatus{Limitation: limitationOf(err)}
		}
		return out
	}
	ok := api.FeatureStatus{Supported: true}
	for _, f := range Features {
		out[f] = ok
	}
	if x.wm(ctx) == "" {
		out[api.FeatureWindows] = api.FeatureStatus{Limitation: fmt.Sprintf(
			"no EWMH window manager runs on X display %s, so windows cannot be listed or focused (start one, e.g. openbox); screenshots, input and the clipboard still work", d.display)}
	}
	if !x.hasXTest {
		out[api.FeatureInput] = api.FeatureStatus{Limitation: fmt.Sprintf(
			"X display %s lacks the XTEST extension, so input cannot be injected; windows, screenshots and the clipboard still work", d.display)}
	}
	return out
}

// Features are the features this package serves.
var Features = []api.Feature{api.FeatureWindows, api.FeatureScreenshot, api.FeatureInput, api.FeatureClipboardText, api.FeatureLaunchApp}

func limitationOf(err error) string {
	if u, ok := err.(*unavailable); ok {
		return u.limitation
	}
	return err.Error()
}

// use returns the connection for a call needing feature f, or the
// capability_missing error naming why it cannot be served.
func (d *Desktop) use(ctx context.Context, f api.Feature) (*xconn, error) {
	x, err := d.conn(ctx)
	if err != nil {
		if u, ok := err.(*unavailable); ok {
			return nil, api.CapabilityMissing(f, u.limitation)
		}
		return nil, err
	}
	switch {
	case f == api.FeatureWindows && x.wm(ctx) == "":
		// No window manager, or no answer while looking for one.
		if err := x.brokenErr(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, x.ctxErr(ctx, "find the window manager")
		}
		return nil, api.CapabilityMissing(f, d.Status(ctx)[f].Limitation)
	case f == api.FeatureInput && !x.hasXTest:
		return nil, api.CapabilityMissing(f, d.Status(ctx)[f].Limitation)
	}
	return x, nil
}

// envWithDisplay is the environment of a launched app.
func envWithDisplay(display string, extra map[string]string) []string {
	env := make([]string, 0, len(os.Environ())+len(extra)+1)
	for _, kv := range os.Environ() {
		if len(kv) >= 8 && kv[:8] == "DISPLAY=" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "DISPLAY="+display)
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}
