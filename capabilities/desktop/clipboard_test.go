package desktop_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// clipOwnerChunk is how much text the test owner writes per request: one
// X request (without BIG-REQUESTS) holds at most 256 KiB.
const clipOwnerChunk = 200 << 10

// ownClipboard makes a test X client the CLIPBOARD owner that answers
// every UTF8_STRING request with text, written in appended chunks as an
// Xlib client with BIG-REQUESTS would write it in one go.
func ownClipboard(t *testing.T, display string, text []byte) {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("clipboard owner: connect: %v", err)
	}
	t.Cleanup(c.Close)
	intern := func(name string) xproto.Atom {
		r, err := xproto.InternAtom(c, false, uint16(len(name)), name).Reply()
		if err != nil {
			t.Fatalf("intern %s: %v", name, err)
		}
		return r.Atom
	}
	clipboard, utf8 := intern("CLIPBOARD"), intern("UTF8_STRING")
	screen := xproto.Setup(c).DefaultScreen(c)
	id, _ := c.NewId()
	win := xproto.Window(id)
	if err := xproto.CreateWindowChecked(c, 0, win, screen.Root, 0, 0, 1, 1, 0,
		xproto.WindowClassInputOnly, 0, 0, nil).Check(); err != nil {
		t.Fatalf("clipboard owner: window: %v", err)
	}
	if err := xproto.SetSelectionOwnerChecked(c, win, clipboard, xproto.TimeCurrentTime).Check(); err != nil {
		t.Fatalf("clipboard owner: own: %v", err)
	}
	go func() {
		for {
			ev, err := c.WaitForEvent()
			if ev == nil && err == nil {
				return
			}
			req, ok := ev.(xproto.SelectionRequestEvent)
			if !ok {
				continue
			}
			prop := req.Property
			if req.Target != utf8 {
				prop = 0
			} else {
				mode := byte(xproto.PropModeReplace)
				for off := 0; off == 0 || off < len(text); off += clipOwnerChunk {
					chunk := text[off:min(off+clipOwnerChunk, len(text))]
					xproto.ChangeProperty(c, mode, req.Requestor, prop, utf8, 8, uint32(len(chunk)), chunk)
					mode = xproto.PropModeAppend
				}
			}
			notify := xproto.SelectionNotifyEvent{Time: req.Time, Requestor: req.Requestor, Selection: req.Selection, Target: req.Target, Property: prop}
			xproto.SendEvent(c, false, req.Requestor, 0, string(notify.Bytes()))
		}
	}()
}

// TestClipboardGetLarge reads another owner's text: all of it, or an
// error when it is more than the daemon reads, never a silently cut part.
func TestClipboardGetLarge(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240", NoWindowManager: true})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	if _, err := d.ClipboardGet(ctx); err != nil { // connect before the test client (see desktopDaemon)
		t.Fatal(err)
	}
	for _, size := range []int{10, 300 << 10, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3 << 20} {
		text := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		ownClipboard(t, display, text)
		got, err := d.ClipboardGet(ctx)
		if err != nil {
			if e := api.AsError(err); e == nil || e.Kind != api.KindLimitExceeded {
				t.Fatalf("%d bytes: %v; want the text or limit_exceeded", size, err)
			}
			continue
		}
		if got != string(text) {
			t.Fatalf("%d bytes on the clipboard; read %d bytes", size, len(got))
		}
	}
}
