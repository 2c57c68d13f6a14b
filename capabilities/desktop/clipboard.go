package desktop

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

const (
	// MaxClipboardBytes bounds clipboard text: it must fit one X request
	// (256 KiB without BIG-REQUESTS), since the daemon does not do the
	// incremental (INCR) transfer protocol. Reported as
	// limits.max_clipboard_bytes.
	MaxClipboardBytes = 200 << 10
	// clipboardTimeout bounds the wait for the selection owner's answer.
	clipboardTimeout = 2 * time.Second
	clipProperty     = "CUA_SPACESD_CLIPBOARD"
)

// clipboard owns CLIPBOARD and PRIMARY while it holds text, and converts
// other owners' selections into a property of its own window.
type clipboard struct {
	x   *xconn
	win xproto.Window

	mu    sync.Mutex // guards text, owned
	text  string
	owned bool

	get    semaphore // one conversion at a time
	notify chan xproto.SelectionNotifyEvent
}

func newClipboard(ctx context.Context, x *xconn) (*clipboard, error) {
	var w xproto.Window
	err := x.do(ctx, "create the clipboard window", func() error {
		id, err := x.c.NewId()
		if err != nil {
			return err
		}
		w = xproto.Window(id)
		return xproto.CreateWindowChecked(x.c, 0, w, x.root, -10, -10, 1, 1, 0,
			xproto.WindowClassInputOnly, 0, xproto.CwEventMask,
			[]uint32{xproto.EventMaskPropertyChange}).Check()
	})
	if err != nil {
		return nil, err
	}
	return &clipboard{x: x, win: w, get: newSemaphore(), notify: make(chan xproto.SelectionNotifyEvent, 1)}, nil
}

// ClipboardSet puts text on CLIPBOARD and PRIMARY.
func (d *Desktop) ClipboardSet(ctx context.Context, text string) error {
	if len(text) > MaxClipboardBytes {
		return api.Errorf(api.KindInvalidArgument, "clipboard text is %d bytes, over the limit of %d", len(text), MaxClipboardBytes)
	}
	if !utf8.ValidString(text) {
		return api.Errorf(api.KindInvalidArgument, "clipboard text is not valid UTF-8")
	}
	x, err := d.use(ctx, api.FeatureClipboardText)
	if err != nil {
		return err
	}
	c := x.clip
	c.mu.Lock()
	c.text, c.owned = text, true
	c.mu.Unlock()
	for _, sel := range []string{"CLIPBOARD", "PRIMARY"} {
		a, err := x.atom(ctx, sel)
		if err != nil {
			return err
		}
		err = x.do(ctx, "take the "+sel+" selection", func() error {
			return xerr("take the "+sel+" selection", xproto.SetSelectionOwnerChecked(x.c, c.win, a, xproto.TimeCurrentTime).Check())
		})
		if err != nil {
			return err
		}
		r, err := await(ctx, x, "check the "+sel+" owner", func() (*xproto.GetSelectionOwnerReply, error) {
			return xproto.GetSelectionOwner(x.c, a).Reply()
		})
		if err != nil {
			return err
		}
		if r.Owner != c.win {
			return api.Errorf(api.KindEnv, "another client kept the %s selection", sel)
		}
	}
	return nil
}

// ClipboardGet reads CLIPBOARD as text ("" when nobody owns it).
func (d *Desktop) ClipboardGet(ctx context.Context) (string, error) {
	x, err := d.use(ctx, api.FeatureClipboardText)
	if err != nil {
		return "", err
	}
	c := x.clip
	sel, err := x.atom(ctx, "CLIPBOARD")
	if err != nil {
		return "", err
	}
	owner, err := await(ctx, x, "ask the clipboard owner", func() (*xproto.GetSelectionOwnerReply, error) {
		return xproto.GetSelectionOwner(x.c, sel).Reply()
	})
	if err != nil {
		return "", err
	}
	if owner.Owner == 0 {
		return "", nil
	}
	if owner.Owner == c.win {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.text, nil
	}
	if err := c.get.acquire(ctx); err != nil {
		return "", x.ctxErr(ctx, "wait for another clipboard read")
	}
	defer c.get.release()
	for _, target := range []string{"UTF8_STRING", "STRING"} {
		text, ok, err := c.convert(ctx, sel, target)
		if err != nil || ok {
			return text, err
		}
	}
	return "", api.Errorf(api.KindEnv, "the clipboard owner offers no text")
}

// convert asks the owner for the selection as target and reads the answer.
func (c *clipboard) convert(ctx context.Context, sel xproto.Atom, target string) (string, bool, error) {
	x := c.x
	t, err := x.atom(ctx, target)
	if err != nil {
		return "", false, err
	}
	incr, err := x.atom(ctx, "INCR")
	if err != nil {
		return "", false, err
	}
	prop, err := x.atom(ctx, clipProperty)
	if err != nil {
		return "", false, err
	}
	select { // a late answer of an earlier, timed-out call
	case <-c.notify:
	default:
	}
	if err := x.do(ctx, "ask for the clipboard", func() error {
		xproto.ConvertSelection(x.c, c.win, sel, t, prop, xproto.TimeCurrentTime)
		return nil
	}); err != nil {
		return "", false, err
	}
	timer := time.NewTimer(clipboardTimeout)
	defer timer.Stop()
	var ev xproto.SelectionNotifyEvent
	select {
	case ev = <-c.notify:
	case <-timer.C:
		return "", false, api.Errorf(api.KindTimeout, "the clipboard owner did not answer within %s", clipboardTimeout)
	case <-ctx.Done():
		return "", false, api.Errorf(api.KindCancelled, "clipboard read cancelled: %w", ctx.Err())
	}
	if ev.Property == 0 {
		return "", false, nil // refused this target
	}
	r, err := await(ctx, x, "read the clipboard property", func() (*xproto.GetPropertyReply, error) {
		r, err := xproto.GetProperty(x.c, true, c.win, prop, xproto.GetPropertyTypeAny, 0, maxPropWords).Reply()
		if err == nil && r.BytesAfter > 0 {
			// GetProperty deletes the property only when it read all of it.
			xproto.DeleteProperty(x.c, c.win, prop)
		}
		return r, err
	})
	if err != nil {
		return "", false, err
	}
	if r.BytesAfter > 0 {
		// Not retryable: the same clipboard stays too big until it changes.
		return "", false, api.Errorf(api.KindLimitExceeded, "the clipboard holds more than the %d bytes the daemon reads", maxPropWords*4).WithRetryable(false)
	}
	if r.Type == incr {
		return "", false, api.Errorf(api.KindLimitExceeded, "the clipboard holds more text than one transfer carries (incremental transfer is not supported; limit about %d bytes)", MaxClipboardBytes).WithRetryable(false)
	}
	if target == "STRING" {
		return latin1ToUTF8(r.Value), true, nil
	}
	return string(r.Value), true, nil
}

func latin1ToUTF8(b []byte) string {
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = rune(c)
	}
	return string(rs)
}

func (c *clipboard) onNotify(e xproto.SelectionNotifyEvent) {
	if e.Requestor != c.win {
		return
	}
	select {
	case c.notify <- e:
	default:
	}
}

func (c *clipboard) onProperty(xproto.PropertyNotifyEvent) {}

func (c *clipboard) onClear(e xproto.SelectionClearEvent) {
	// The event loop has no caller's context; replyTimeout bounds it.
	if e.Owner != c.win || e.Selection != c.x.mustAtom(context.Background(), "CLIPBOARD") {
		return
	}
	c.mu.Lock()
	c.owned, c.text = false, ""
	c.mu.Unlock()
}

// onRequest answers another client's request for the text the daemon owns.
func (c *clipboard) onRequest(e xproto.SelectionRequestEvent) {
	x := c.x
	c.mu.Lock()
	text, owned := c.text, c.owned
	c.mu.Unlock()
	prop := e.Property
	if prop == 0 {
		prop = e.Target // an obsolete client: answer in the target's name
	}
	ctx := context.Background() // the event loop's; replyTimeout bounds it
	utf8Atom, str, txt, targets := x.mustAtom(ctx, "UTF8_STRING"), xproto.Atom(xproto.AtomString), x.mustAtom(ctx, "TEXT"), x.mustAtom(ctx, "TARGETS")
	ok := owned
	if ok {
		switch e.Target {
		case targets:
			list := []xproto.Atom{targets, utf8Atom, str, txt}
			buf := make([]byte, 4*len(list))
			for i, a := range list {
				xgbPut32(buf[i*4:], uint32(a))
			}
			xproto.ChangeProperty(x.c, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomAtom, 32, uint32(len(list)), buf)
		case utf8Atom, txt:
			xproto.ChangeProperty(x.c, xproto.PropModeReplace, e.Requestor, prop, utf8Atom, 8, uint32(len(text)), []byte(text))
		case str:
			b := utf8ToLatin1(text)
			xproto.ChangeProperty(x.c, xproto.PropModeReplace, e.Requestor, prop, str, 8, uint32(len(b)), b)
		default:
			ok = false
		}
	}
	if !ok {
		prop = 0
	}
	ev := xproto.SelectionNotifyEvent{Time: e.Time, Requestor: e.Requestor, Selection: e.Selection, Target: e.Target, Property: prop}
	xproto.SendEvent(x.c, false, e.Requestor, 0, string(ev.Bytes()))
}

func utf8ToLatin1(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

func xgbPut32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
