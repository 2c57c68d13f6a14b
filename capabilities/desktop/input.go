package desktop

import (
	"context"
	"math"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/trycua/cua-spacesd/api"
)

// Input limits. The exported ones are enforced here and reported in the
// capabilities' limits (max_click_count, max_scroll_clicks, max_type_chars),
// where clients read them instead of keeping a copy.
const (
	MaxClickCount   = 10
	MaxScrollClicks = 200
	MaxTypeRunes    = 100_000
	maxScale        = 16
	defaultDrag     = 200 * time.Millisecond
	maxDrag         = 30 * time.Second
	dragSteps       = 20
)

// X core event types as XTEST takes them.
const (
	evKeyPress      = 2
	evKeyRelease    = 3
	evButtonPress   = 4
	evButtonRelease = 5
	evMotion        = 6
)

var buttons = map[string]byte{"": 1, api.ButtonLeft: 1, api.ButtonMiddle: 2, api.ButtonRight: 3}

// maxQueuedEvents bounds the input events queued before they are sent and
// confirmed in one exchange, so each exchange stays far within replyTimeout.
const maxQueuedEvents = 1024

// held is what an input call pressed and has not (knowingly) released.
type held struct {
	keys []xproto.Keycode
	btns []byte
}

func (h held) empty() bool { return len(h.keys) == 0 && len(h.btns) == 0 }

// fakeEvent is one queued XTEST event.
type fakeEvent struct {
	typ, detail byte
	x, y        int16
}

// session is one input call. Its events are queued and sent in exchanges
// bounded by the caller's context and replyTimeout; it remembers what it
// holds down so that an error or cancellation releases everything.
type session struct {
	d *Desktop
	x *xconn
	// scope, when set, confines the session's input to one window
	// (confine.go).
	scope *scope
	held
	// owed are releases an earlier, abandoned call could not confirm;
	// they go out before this call's own events.
	owed  held
	queue []fakeEvent
}

func (s *session) fake(typ, detail byte, x, y int16) {
	s.queue = append(s.queue, fakeEvent{typ, detail, x, y})
}

func (s *session) keyDown(kc xproto.Keycode) {
	s.fake(evKeyPress, byte(kc), 0, 0)
	s.keys = append(s.keys, kc)
}

func (s *session) keyUp(kc xproto.Keycode) {
	s.fake(evKeyRelease, byte(kc), 0, 0)
	for i := len(s.keys) - 1; i >= 0; i-- {
		if s.keys[i] == kc {
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
			break
		}
	}
}

func (s *session) buttonDown(b byte) {
	s.fake(evButtonPress, b, 0, 0)
	s.btns = append(s.btns, b)
}

func (s *session) buttonUp(b byte) {
	s.fake(evButtonRelease, b, 0, 0)
	for i := len(s.btns) - 1; i >= 0; i-- {
		if s.btns[i] == b {
			s.btns = append(s.btns[:i], s.btns[i+1:]...)
			break
		}
	}
}

func (s *session) move(x, y int) { s.fake(evMotion, 0, int16(x), int16(y)) }

// flush sends the queued events (after the owed releases) and waits until
// the server has processed them.
func (s *session) flush(ctx context.Context) error {
	q := s.queue
	s.queue = nil
	owed := s.owed
	x := s.x
	// A confined session's key presses go only to its window while that
	// window has the focus: checked before they are sent and again, from
	// the sync's answer, after (confine.go).
	keys := s.scope != nil && pressesKey(q)
	var refused, moved error
	pointerMoved := false
	err := x.do(ctx, "send input", func() error {
		for i := len(owed.keys) - 1; i >= 0; i-- {
			xtest.FakeInput(x.c, evKeyRelease, byte(owed.keys[i]), 0, x.root, 0, 0, 0)
		}
		for i := len(owed.btns) - 1; i >= 0; i-- {
			xtest.FakeInput(x.c, evButtonRelease, owed.btns[i], 0, x.root, 0, 0, 0)
		}
		send := q
		if keys {
			if refused = x.keysAllowed(s.scope.ref); refused != nil {
				send = nil // the owed releases still go, with the sync below
			}
		}
		for _, e := range send {
			xtest.FakeInput(x.c, e.typ, e.detail, 0, x.root, e.x, e.y, 0)
			pointerMoved = pointerMoved || e.typ == evMotion
		}
		f, err := xproto.GetInputFocus(x.c).Reply()
		if err != nil {
			return xerr("sync with the X server", err)
		}
		if keys && refused == nil {
			moved = x.focusStayed(s.scope.ref, f.Focus)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if pointerMoved {
		x.onPointerMoved()
	}
	s.owed = held{}
	if refused != nil {
		s.forgetPresses(q)
		return refused
	}
	return moved
}

// flushIfFull sends the queue once it is long.
func (s *session) flushIfFull(ctx context.Context) error {
	if len(s.queue) < maxQueuedEvents {
		return nil
	}
	return s.flush(ctx)
}

// finish releases whatever is still held and waits until the server has
// processed every event, so the answer means "delivered".
func (s *session) finish(ctx context.Context) error {
	for i := len(s.keys) - 1; i >= 0; i-- {
		s.fake(evKeyRelease, byte(s.keys[i]), 0, 0)
	}
	for i := len(s.btns) - 1; i >= 0; i-- {
		s.fake(evButtonRelease, s.btns[i], 0, 0)
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	s.held = held{}
	return nil
}

// begin starts an input call: one at a time, so sequences never interleave.
// A call waiting for an earlier one gives up when its own context ends.
func (d *Desktop) begin(ctx context.Context, sc *scope) (*session, error) {
	x, err := d.use(ctx, api.FeatureInput)
	if err != nil {
		return nil, err
	}
	if d.input.acquire(ctx) != nil {
		return nil, x.ctxErr(ctx, "wait for an earlier input call")
	}
	s := &session{d: d, x: x, scope: sc, owed: d.owed}
	d.owed = held{}
	return s, nil
}

// end ends an input call. What an abandoned call (an error, a cancelled or
// timed-out context) may have left pressed is released in the background,
// with its own replyTimeout, so that the caller is answered at once; the
// next input call waits for that release rather than interleave with it.
// When even the release gets no answer (the connection is dropped), the
// next input call, on a new connection, sends the releases first. So keys
// and buttons are released as soon as the display answers again; nothing
// can be released while it does not.
func (s *session) end() {
	if s.held.empty() && s.owed.empty() {
		s.d.input.release()
		return
	}
	s.queue = nil // unsent events of the abandoned call are dropped
	go func() {
		defer s.d.input.release()
		ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
		defer cancel()
		if err := s.finish(ctx); err != nil {
			s.d.owed = held{ // guarded by d.input, held until this returns
				keys: append(s.owed.keys, s.keys...),
				btns: append(s.owed.btns, s.btns...),
			}
		}
	}()
}

// toScreen applies the coordinate rule: (px, py) in the pixels of a
// screenshot with the given scale, relative to the window's content when
// WindowID is set, maps to the screen pixel whose centre the screenshot
// pixel covers.
func (x *xconn) toScreen(ctx context.Context, p api.Pointer, px, py float64) (int, int, error) {
	scale := p.Scale
	if scale == 0 {
		scale = 1
	}
	if !(scale > 0 && scale <= maxScale) || math.IsNaN(px) || math.IsNaN(py) || math.IsInf(px, 0) || math.IsInf(py, 0) {
		return 0, 0, api.Errorf(api.KindInvalidArgument, "scale %v and point (%v, %v): scale must be in (0, %d] and the point finite", p.Scale, px, py, maxScale)
	}
	var ox, oy int
	if p.WindowID != 0 {
		o, err := await(ctx, x, "place the point in its window", func() (*xproto.TranslateCoordinatesReply, error) {
			return xproto.TranslateCoordinates(x.c, xproto.Window(p.WindowID), x.root, 0, 0).Reply()
		})
		if err != nil {
			if ae, ok := err.(*api.Error); ok && ae.Kind != api.KindEnv {
				return 0, 0, err // no answer: timeout or cancelled
			}
			return 0, 0, api.Errorf(api.KindNotFound, "no window %d to place the point in; list the windows first", p.WindowID)
		}
		ox, oy = int(o.DstX), int(o.DstY)
	}
	sx := ox + int(math.Floor((px+0.5)/scale))
	sy := oy + int(math.Floor((py+0.5)/scale))
	w, h, err := x.screenSize(ctx)
	if err != nil {
		return 0, 0, err
	}
	if sx < 0 || sy < 0 || sx >= w || sy >= h {
		return 0, 0, api.Errorf(api.KindInvalidArgument, "point (%v, %v) at scale %v is screen pixel (%d, %d), outside the %dx%d screen", px, py, scale, sx, sy, w, h)
	}
	return sx, sy, nil
}

// MoveMouse moves the pointer.
func (d *Desktop) MoveMouse(ctx context.Context, req api.MouseMoveRequest) (api.InputResult, error) {
	return d.moveMouse(ctx, nil, req)
}

func (d *Desktop) moveMouse(ctx context.Context, sc *scope, req api.MouseMoveRequest) (api.InputResult, error) {
	s, err := d.begin(ctx, sc)
	if err != nil {
		return api.InputResult{}, err
	}
	defer s.end()
	sx, sy, err := s.point(ctx, req.Pointer, req.X, req.Y)
	if err != nil {
		return api.InputResult{}, err
	}
	s.move(sx, sy)
	return api.InputResult{X: sx, Y: sy}, s.finish(ctx)
}

// Click clicks count times at a point.
func (d *Desktop) Click(ctx context.Context, req api.ClickRequest) (api.InputResult, error) {
	return d.click(ctx, nil, req)
}

func (d *Desktop) click(ctx context.Context, sc *scope, req api.ClickRequest) (api.InputResult, error) {
	b, ok := buttons[req.Button]
	if !ok {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "button %q: want left, middle or right", req.Button)
	}
	if req.Count == 0 {
		req.Count = 1
	}
	if req.Count < 1 || req.Count > MaxClickCount {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "count %d is out of range 1-%d", req.Count, MaxClickCount)
	}
	s, err := d.begin(ctx, sc)
	if err != nil {
		return api.InputResult{}, err
	}
	defer s.end()
	sx, sy, err := s.point(ctx, req.Pointer, req.X, req.Y)
	if err != nil {
		return api.InputResult{}, err
	}
	s.move(sx, sy)
	for range req.Count {
		s.buttonDown(b)
		s.buttonUp(b)
	}
	button := req.Button
	if button == "" {
		button = api.ButtonLeft
	}
	return api.InputResult{X: sx, Y: sy, Button: button, Count: req.Count}, s.finish(ctx)
}

// Drag presses a button at one point, moves in steps to another, releases.
func (d *Desktop) Drag(ctx context.Context, req api.DragRequest) (api.InputResult, error) {
	b, ok := buttons[req.Button]
	if !ok {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "button %q: want left, middle or right", req.Button)
	}
	dur := defaultDrag
	if req.DurationMS != 0 {
		dur = time.Duration(req.DurationMS) * time.Millisecond
	}
	if dur < 0 || dur > maxDrag {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "duration_ms %d is out of range 0-%d", req.DurationMS, maxDrag.Milliseconds())
	}
	s, err := d.begin(ctx, nil)
	if err != nil {
		return api.InputResult{}, err
	}
	defer s.end()
	fx, fy, err := s.x.toScreen(ctx, req.Pointer, req.FromX, req.FromY)
	if err != nil {
		return api.InputResult{}, err
	}
	tx, ty, err := s.x.toScreen(ctx, req.Pointer, req.ToX, req.ToY)
	if err != nil {
		return api.InputResult{}, err
	}
	s.move(fx, fy)
	s.buttonDown(b)
	for i := 1; i <= dragSteps; i++ {
		// Apps see a drag only through motion events spread over time.
		if err := s.flush(ctx); err != nil {
			return api.InputResult{}, err
		}
		if err := sleepCtx(ctx, dur/dragSteps); err != nil {
			return api.InputResult{}, err
		}
		s.move(fx+(tx-fx)*i/dragSteps, fy+(ty-fy)*i/dragSteps)
	}
	s.buttonUp(b)
	button := req.Button
	if button == "" {
		button = api.ButtonLeft
	}
	return api.InputResult{X: tx, Y: ty, Button: button}, s.finish(ctx)
}

// Scroll turns the wheel: buttons 4/5 vertically, 6/7 horizontally.
func (d *Desktop) Scroll(ctx context.Context, req api.ScrollRequest) (api.InputResult, error) {
	return d.scroll(ctx, nil, req)
}

func (d *Desktop) scroll(ctx context.Context, sc *scope, req api.ScrollRequest) (api.InputResult, error) {
	if abs(req.DX) > MaxScrollClicks || abs(req.DY) > MaxScrollClicks {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "scroll (%d, %d) is over %d clicks", req.DX, req.DY, MaxScrollClicks)
	}
	if (req.X == nil) != (req.Y == nil) {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "give both x and y, or neither")
	}
	if sc != nil && req.X == nil {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "a scroll confined to window %d needs x and y", sc.ref.ID)
	}
	s, err := d.begin(ctx, sc)
	if err != nil {
		return api.InputResult{}, err
	}
	defer s.end()
	var res api.InputResult
	if req.X != nil {
		sx, sy, err := s.point(ctx, req.Pointer, *req.X, *req.Y)
		if err != nil {
			return res, err
		}
		s.move(sx, sy)
	}
	wheel := func(n int, neg, pos byte) {
		b := pos
		if n < 0 {
			b, n = neg, -n
		}
		for range n {
			s.buttonDown(b)
			s.buttonUp(b)
		}
	}
	wheel(req.DY, 4, 5)
	wheel(req.DX, 6, 7)
	if err := s.finish(ctx); err != nil {
		return res, err
	}
	if q, err := await(ctx, s.x, "read the pointer", func() (*xproto.QueryPointerReply, error) {
		return xproto.QueryPointer(s.x.c, s.x.root).Reply()
	}); err == nil {
		res.X, res.Y = int(q.RootX), int(q.RootY)
	}
	return res, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Key presses one key or hotkey.
func (d *Desktop) Key(ctx context.Context, key string) (api.InputResult, error) {
	return d.key(ctx, nil, key)
}

func (d *Desktop) key(ctx context.Context, sc *scope, key string) (api.InputResult, error) {
	combo, err := ParseKeyCombo(key)
	if err != nil {
		return api.InputResult{}, err
	}
	return d.withKeyboard(ctx, sc, func(s *session, k *keyboard, call uint64) (api.InputResult, error) {
		shiftHeld := false
		for _, m := range combo.Mods {
			kc, _, err := k.bind(ctx, s, xproto.Keysym(m), call)
			if err != nil {
				return api.InputResult{}, err
			}
			shiftHeld = shiftHeld || m == ksShiftL
			s.keyDown(kc)
		}
		if err := s.stroke(ctx, k, xproto.Keysym(combo.Key), call, shiftHeld); err != nil {
			return api.InputResult{}, err
		}
		return api.InputResult{Key: key}, s.finish(ctx)
	})
}

// stroke presses and releases the key yielding sym, with Shift when the
// keysym sits on the shifted level.
func (s *session) stroke(ctx context.Context, k *keyboard, sym xproto.Keysym, call uint64, shiftHeld bool) error {
	kc, shift, err := k.bind(ctx, s, sym, call)
	if err != nil {
		return err
	}
	var shiftKC xproto.Keycode
	if shift && !shiftHeld {
		shiftKC, _, err = k.bind(ctx, s, ksShiftL, call)
		if err != nil {
			return err
		}
		s.keyDown(shiftKC)
	}
	s.keyDown(kc)
	s.keyUp(kc)
	if shiftKC != 0 {
		s.keyUp(shiftKC)
	}
	return nil
}

// withKeyboard runs a keyboard operation in an input session holding the
// keymap: loaded, with its temporary bindings restored after the call.
func (d *Desktop) withKeyboard(ctx context.Context, sc *scope, op func(s *session, k *keyboard, call uint64) (api.InputResult, error)) (api.InputResult, error) {
	s, err := d.begin(ctx, sc)
	if err != nil {
		return api.InputResult{}, err
	}
	defer s.end()
	k := s.x.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	defer k.scheduleRestore()
	if err := k.load(ctx); err != nil {
		return api.InputResult{}, err
	}
	return op(s, k, k.tick())
}

// Type types Unicode text; characters without a key are bound to a spare
// keycode for the time of their keystrokes.
func (d *Desktop) Type(ctx context.Context, text string) (api.InputResult, error) {
	return d.typeText(ctx, nil, text)
}

func (d *Desktop) typeText(ctx context.Context, sc *scope, text string) (api.InputResult, error) {
	if !utf8.ValidString(text) {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "text is not valid UTF-8")
	}
	n := utf8.RuneCountInString(text)
	if n > MaxTypeRunes {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "text has %d characters, over the limit of %d per call", n, MaxTypeRunes)
	}
	syms := make([]xproto.Keysym, 0, n)
	prev := rune(0)
	for _, r := range text {
		if r == '\n' && prev == '\r' {
			prev = r
			continue // CRLF is one Return
		}
		prev = r
		ks, ok := keysymOfRune(r)
		if !ok {
			return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "text holds the control character U+%04X, which has no key", r)
		}
		syms = append(syms, xproto.Keysym(ks))
	}
	return d.withKeyboard(ctx, sc, func(s *session, k *keyboard, call uint64) (api.InputResult, error) {
		for i, sym := range syms {
			if ctx.Err() != nil {
				return api.InputResult{Chars: i}, api.Errorf(api.KindCancelled, "typing cancelled after %d characters", i)
			}
			if err := s.stroke(ctx, k, sym, call, false); err != nil {
				return api.InputResult{Chars: i}, err
			}
			if err := s.flushIfFull(ctx); err != nil {
				return api.InputResult{Chars: i}, err
			}
		}
		return api.InputResult{Chars: n}, s.finish(ctx)
	})
}
