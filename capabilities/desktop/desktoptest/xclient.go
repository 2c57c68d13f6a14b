package desktoptest

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// XClient is a small X program of the test: a window painted in known
// colours that records the pointer and key events it receives.
type XClient struct {
	C      *xgb.Conn
	Win    xproto.Window
	w, h   int
	gc     xproto.Gcontext
	events chan xgb.Event

	mu    sync.Mutex
	fills []Fill // painted in order on every Expose

	done      chan struct{} // closed when loop has seen the connection end
	closeOnce sync.Once
	marker    xproto.Atom // the type of Collect's own client messages
}

// Fill is one coloured rectangle of the window (window coordinates).
type Fill struct {
	X, Y, W, H int
	RGB        uint32
}

// nearChannel is how far one channel of a fill's colour may move in a
// picture of it that went through a lossy video codec (a flat area) and a
// decoder's colour conversion.
const nearChannel = 32

// NearRGB tells whether two 0xRRGGBB colours are the same fill's, seen
// through a lossy video codec: each channel within nearChannel.
func NearRGB(a, b uint32) bool {
	for shift := 0; shift <= 16; shift += 8 {
		d := int(a>>shift&0xff) - int(b>>shift&0xff)
		if d < -nearChannel || d > nearChannel {
			return false
		}
	}
	return true
}

// The four quarters of a 200x200 test window, in colours no theme uses.
var (
	Red   = Fill{0, 0, 100, 100, 0xff0000}
	Green = Fill{100, 0, 100, 100, 0x00ff00}
	Blue  = Fill{0, 100, 100, 100, 0x0000ff}
	White = Fill{100, 100, 100, 100, 0xffffff}
)

// NewXClient opens a managed window with the given title and content.
func NewXClient(t testing.TB, display, title string, w, h int, fills []Fill) *XClient {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("test client: connect %s: %v", display, err)
	}
	t.Cleanup(c.Close)
	screen := xproto.Setup(c).DefaultScreen(c)
	id, _ := c.NewId()
	win := xproto.Window(id)
	mask := uint32(xproto.EventMaskExposure | xproto.EventMaskButtonPress | xproto.EventMaskKeyPress | xproto.EventMaskStructureNotify)
	if err := xproto.CreateWindowChecked(c, screen.RootDepth, win, screen.Root, 0, 0, uint16(w), uint16(h), 0,
		xproto.WindowClassInputOutput, screen.RootVisual, xproto.CwBackPixel|xproto.CwEventMask,
		[]uint32{0x808080, mask}).Check(); err != nil {
		t.Fatalf("test client: create window: %v", err)
	}
	setProp := func(name, typ string, format byte, data []byte) {
		a, _ := xproto.InternAtom(c, false, uint16(len(name)), name).Reply()
		ty, _ := xproto.InternAtom(c, false, uint16(len(typ)), typ).Reply()
		xproto.ChangeProperty(c, xproto.PropModeReplace, win, a.Atom, ty.Atom, format, uint32(len(data))/uint32(format/8), data)
	}
	setProp("_NET_WM_NAME", "UTF8_STRING", 8, []byte(title))
	setProp("WM_CLASS", "STRING", 8, []byte("cuatest\x00CuaTest\x00"))
	pid := make([]byte, 4)
	binary.LittleEndian.PutUint32(pid, uint32(os.Getpid()))
	setProp("_NET_WM_PID", "CARDINAL", 32, pid)
	gid, _ := c.NewId()
	gc := xproto.Gcontext(gid)
	xproto.CreateGC(c, gc, xproto.Drawable(win), 0, nil)
	xc := &XClient{C: c, Win: win, w: w, h: h, fills: fills, gc: gc, events: make(chan xgb.Event, 1024), done: make(chan struct{})}
	if a, err := xproto.InternAtom(c, false, uint16(len(collectMarker)), collectMarker).Reply(); err == nil {
		xc.marker = a.Atom
	}
	xproto.MapWindow(c, win)
	go xc.loop()
	t.Cleanup(xc.Close)
	return xc
}

// collectMarker names the client message Collect sends itself.
const collectMarker = "CUA_TEST_COLLECT"

// Collect answers every event the window received so far (Expose
// aside), and drops them: it sends the window a client message of its
// own and reads up to it, so that nothing the server delivered before
// the call is missed, without a wait for events that may never come.
func (xc *XClient) Collect(t testing.TB) []xgb.Event {
	t.Helper()
	ev := xproto.ClientMessageEvent{Format: 32, Window: xc.Win, Type: xc.marker,
		Data: xproto.ClientMessageDataUnionData32New(make([]uint32, 5))}
	// An empty event mask sends it to the window's creator: this client.
	if err := xproto.SendEventChecked(xc.C, false, xc.Win, 0, string(ev.Bytes())).Check(); err != nil {
		t.Fatalf("test client: send the collect marker: %v", err)
	}
	var got []xgb.Event
	deadline := time.After(EventTimeout)
	for {
		select {
		case e, ok := <-xc.events:
			if !ok {
				t.Fatal("test client: connection closed")
			}
			if m, ok := e.(xproto.ClientMessageEvent); ok && m.Type == xc.marker {
				return got
			}
			got = append(got, e)
		case <-deadline:
			t.Fatalf("test client: its own client message did not come back within %s", EventTimeout)
			return nil
		}
	}
}

func (xc *XClient) paint() {
	xc.mu.Lock()
	fills := xc.fills
	xc.mu.Unlock()
	for _, f := range fills {
		xc.draw(f)
	}
	_, _ = xproto.GetInputFocus(xc.C).Reply()
}

func (xc *XClient) draw(f Fill) {
	xproto.ChangeGC(xc.C, xc.gc, xproto.GcForeground, []uint32{f.RGB})
	xproto.PolyFillRectangle(xc.C, xproto.Drawable(xc.Win), xc.gc,
		[]xproto.Rectangle{{X: int16(f.X), Y: int16(f.Y), Width: uint16(f.W), Height: uint16(f.H)}})
}

// Fill paints one more rectangle now, as an app drawing would, and keeps
// it for later repaints; it returns once the server has drawn it.
func (xc *XClient) Fill(f Fill) {
	xc.mu.Lock()
	xc.fills = append(slices.Clip(xc.fills), f)
	xc.mu.Unlock()
	xc.draw(f)
	_, _ = xproto.GetInputFocus(xc.C).Reply()
}

// SetGlyphCursor gives the window a cursor of X's cursor font (glyph is
// its index in X11/cursorfont.h; its mask is the next glyph), as apps set
// a hand over a link or a text beam over text.
func (xc *XClient) SetGlyphCursor(t testing.TB, glyph uint16) {
	t.Helper()
	fid, err := xc.C.NewId()
	if err != nil {
		t.Fatal(err)
	}
	cid, err := xc.C.NewId()
	if err != nil {
		t.Fatal(err)
	}
	font, cursor := xproto.Font(fid), xproto.Cursor(cid)
	if err := xproto.OpenFontChecked(xc.C, font, uint16(len("cursor")), "cursor").Check(); err != nil {
		t.Fatalf("open the cursor font: %v", err)
	}
	if err := xproto.CreateGlyphCursorChecked(xc.C, cursor, font, font, glyph, glyph+1, 0, 0, 0, 0xffff, 0xffff, 0xffff).Check(); err != nil {
		t.Fatalf("create the glyph cursor: %v", err)
	}
	if err := xproto.ChangeWindowAttributesChecked(xc.C, xc.Win, xproto.CwCursor, []uint32{uint32(cursor)}).Check(); err != nil {
		t.Fatalf("set the window's cursor: %v", err)
	}
}

// CursorHand2 is the hand of X's cursor font.
const CursorHand2 = 60

// loop repaints on Expose and hands every other event to the test.
func (xc *XClient) loop() {
	defer close(xc.done)
	for {
		ev, err := xc.C.WaitForEvent()
		if ev == nil && err == nil {
			close(xc.events)
			return
		}
		if _, ok := ev.(xproto.ExposeEvent); ok {
			xc.paint()
			continue
		}
		if ev != nil {
			select {
			case xc.events <- ev:
			default:
			}
		}
	}
}

// Close ends the connection, which destroys the window (the X server
// frees the client's resources, and may hand their ids to the next
// client), and waits until xgb's reader has stopped: xgb keeps the event
// decoders of extensions in package-level maps, which the next test's
// connection setup writes, and only a reader known to be done cannot race
// with that. It is also the test's cleanup; a second call does nothing.
func (xc *XClient) Close() {
	xc.closeOnce.Do(func() {
		xc.C.Close()
		select {
		case <-xc.done:
		case <-time.After(EventTimeout): // a stopped server; the test failed anyway
		}
	})
}

// Next returns the next event of type T within the timeout.
func Next[T xgb.Event](t testing.TB, xc *XClient, timeout time.Duration) T {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-xc.events:
			if !ok {
				t.Fatal("test client: connection closed")
			}
			if e, ok := ev.(T); ok {
				return e
			}
		case <-deadline:
			var zero T
			t.Fatalf("test client: no %T within %s", zero, timeout)
			return zero
		}
	}
}

// Drain drops the events received so far.
func (xc *XClient) Drain() {
	for {
		select {
		case <-xc.events:
		default:
			return
		}
	}
}

// EventTimeout bounds waits for effects on the display: a generous bound
// for a loaded CI machine, not a performance assertion.
const EventTimeout = 20 * time.Second

// Eventually polls cond until it holds, failing the test after EventTimeout.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, what, EventTimeout, cond)
}

// EventuallyWithin is Eventually with a bound of its own, for effects
// that take a heavier program than the X server (a browser) through
// several steps on a loaded machine.
func EventuallyWithin(t testing.TB, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, bound)
		}
		time.Sleep(20 * time.Millisecond) // polling interval of the eventually loop
	}
}

// RandomWord is a word no window title has yet.
func RandomWord(t testing.TB) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "cua" + hex.EncodeToString(b)
}
