package desktoptest

import (
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// maxSelectionWords bounds the selection ReadClipboard reads (4 MiB).
const maxSelectionWords = 1 << 20

// ReadClipboard reads the CLIPBOARD selection as UTF-8 text, as any X
// program pasting it would: it asks the owner to convert it to UTF8_STRING
// into a property of a window of its own, then reads that property. It
// answers "" when nobody owns the clipboard.
func ReadClipboard(t testing.TB, display string) string {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("clipboard reader: connect %s: %v", display, err)
	}
	events := make(chan xgb.Event, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := c.WaitForEvent()
			if ev == nil && err == nil {
				return
			}
			if ev != nil {
				select {
				case events <- ev:
				default: // nobody reads any more
				}
			}
		}
	}()
	defer func() {
		// Wait for the reader, as XClient.close does: xgb's package-level
		// extension maps must not race with the next connection's setup.
		c.Close()
		select {
		case <-done:
		case <-time.After(EventTimeout):
		}
	}()
	atom := func(name string) xproto.Atom {
		r, err := xproto.InternAtom(c, false, uint16(len(name)), name).Reply()
		if err != nil {
			t.Fatalf("clipboard reader: intern %s: %v", name, err)
		}
		return r.Atom
	}
	clipboard, utf8String, prop := atom("CLIPBOARD"), atom("UTF8_STRING"), atom("CUA_TEST_PASTE")
	screen := xproto.Setup(c).DefaultScreen(c)
	id, err := c.NewId()
	if err != nil {
		t.Fatalf("clipboard reader: %v", err)
	}
	win := xproto.Window(id)
	if err := xproto.CreateWindowChecked(c, 0, win, screen.Root, 0, 0, 1, 1, 0, xproto.WindowClassInputOnly, 0, 0, nil).Check(); err != nil {
		t.Fatalf("clipboard reader: create window: %v", err)
	}
	owner, err := xproto.GetSelectionOwner(c, clipboard).Reply()
	if err != nil {
		t.Fatalf("clipboard reader: selection owner: %v", err)
	}
	if owner.Owner == 0 {
		return ""
	}
	if err := xproto.ConvertSelectionChecked(c, win, clipboard, utf8String, prop, xproto.TimeCurrentTime).Check(); err != nil {
		t.Fatalf("clipboard reader: convert selection: %v", err)
	}
	deadline := time.After(EventTimeout)
	for {
		select {
		case ev := <-events:
			n, ok := ev.(xproto.SelectionNotifyEvent)
			if !ok {
				continue
			}
			if n.Property == xproto.AtomNone {
				t.Fatalf("clipboard reader: the owner (window %d) refused to convert the clipboard to UTF8_STRING", owner.Owner)
			}
			r, err := xproto.GetProperty(c, true, win, prop, xproto.GetPropertyTypeAny, 0, maxSelectionWords).Reply()
			if err != nil {
				t.Fatalf("clipboard reader: read the pasted text: %v", err)
			}
			if r.Type != utf8String || r.Format != 8 {
				t.Fatalf("clipboard reader: the owner answered type %d format %d, not UTF8_STRING text", r.Type, r.Format)
			}
			return string(r.Value)
		case <-deadline:
			t.Fatalf("clipboard reader: the owner did not answer within %s", EventTimeout)
			return ""
		}
	}
}
