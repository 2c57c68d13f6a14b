package streamsvc_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
)

var allChannels = rtctest.Options{Channels: []string{api.ChannelInput, api.ChannelPointer, api.ChannelControl}}

func sendJSON(t *testing.T, r *rtctest.Receiver, label string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if err := r.Channels[label].SendText(string(b)); err != nil {
		t.Fatalf("send on %s: %v", label, err)
	}
}

func nextMessage(t *testing.T, r *rtctest.Receiver, label string) api.ViewerControl {
	t.Helper()
	select {
	case s := <-r.Messages[label]:
		var m api.ViewerControl
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%s message %q: %v", label, s, err)
		}
		return m
	case <-time.After(frameTimeout):
		t.Fatalf("no message on %s within %s", label, frameTimeout)
		return api.ViewerControl{}
	}
}

// TestViewOnlyGetsNoInput: the daemon closes a view-only viewer's input
// and pointer channels (not only the page), and what it sends on them
// never reaches the desktop; its control channel works.
func TestViewOnlyGetsNoInput(t *testing.T) {
	e := start(t, "640x480")
	xc, win := e.showWindow(t)
	tk := e.ticket(t, api.TicketRequest{WindowID: win.WindowID, ViewOnly: true})
	r, _ := e.view(t, tk.OfferPath, tk.Ticket, allChannels)
	r.NextFrame(t, true, frameTimeout)
	for _, label := range []string{api.ChannelInput, api.ChannelPointer} {
		select {
		case <-r.Closed[label]:
		case <-time.After(frameTimeout):
			t.Fatalf("the view-only viewer's %s channel is still %s", label, r.Channels[label].ReadyState())
		}
		_ = r.Channels[label].SendText(`{"type":"button","x":50,"y":50}`) // refused by the closed channel
	}
	r.WaitOpen(t, api.ChannelControl, frameTimeout)
	sendJSON(t, r, api.ChannelControl, api.ViewerControl{Type: api.ControlPing, ID: 7, T: 1.5})
	for {
		m := nextMessage(t, r, api.ChannelControl)
		if m.Type == api.ControlSize || m.Type == api.ControlCursor || m.Type == api.ControlTicket || m.Type == api.ControlPath || m.Type == api.ControlWho {
			continue
		}
		if m.Type != api.ControlPong || m.ID != 7 || m.T != 1.5 || m.ServerMS == 0 {
			t.Fatalf("answer to a ping: %+v", m)
		}
		break
	}
	// A full viewer's click after the refused ones: the first press the
	// client sees is this one, so the view-only ones never arrived.
	full := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
	f, _ := e.view(t, full.OfferPath, full.Ticket, allChannels)
	f.WaitOpen(t, api.ChannelInput, frameTimeout)
	xc.Drain()
	sendJSON(t, f, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: 150, Y: 20, Button: api.ButtonRight})
	ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
	if ev.Detail != 3 || ev.EventX != 150 || ev.EventY != 20 {
		t.Fatalf("first press the client saw: button %d at (%d, %d), want the full viewer's right click at (150, 20)", ev.Detail, ev.EventX, ev.EventY)
	}
}

// TestInputReachesTheClient: a full viewer's messages reach a test X
// client through XTEST, in the window's own coordinates: a click, a drag
// held across messages, keys, text, and motion on the pointer channel; a
// bad message is answered with an error on its channel.
func TestInputReachesTheClient(t *testing.T) {
	e := start(t, "640x480")
	xc, win := e.showWindow(t)
	tk := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
	r, _ := e.view(t, tk.OfferPath, tk.Ticket, allChannels)
	r.WaitOpen(t, api.ChannelInput, frameTimeout)
	r.WaitOpen(t, api.ChannelPointer, frameTimeout)
	xc.Drain()

	sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: 30, Y: 40})
	if ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout); ev.Detail != 1 || ev.EventX != 30 || ev.EventY != 40 {
		t.Fatalf("click: button %d at (%d, %d), want 1 at (30, 40)", ev.Detail, ev.EventX, ev.EventY)
	}
	sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: 60, Y: 70, Action: api.ActionDown})
	if ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout); ev.EventX != 60 || ev.EventY != 70 {
		t.Fatalf("held press at (%d, %d)", ev.EventX, ev.EventY)
	}
	sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: 80, Y: 90, Action: api.ActionUp})

	root := xproto.Setup(xc.C).DefaultScreen(xc.C).Root
	pointerAt := func(x, y int) func() bool {
		return func() bool {
			q, err := xproto.QueryPointer(xc.C, root).Reply()
			return err == nil && int(q.RootX) == win.Bounds.X+x && int(q.RootY) == win.Bounds.Y+y && q.Mask&xproto.ButtonMask1 == 0
		}
	}
	// The two channels are not ordered with each other: the release is
	// seen first, then the motion is sent.
	eventually(t, "the held button released where the viewer let go", pointerAt(80, 90))
	sendJSON(t, r, api.ChannelPointer, api.ViewerInput{Type: api.InputMove, X: 111, Y: 122})
	eventually(t, "the pointer moved by the pointer channel", pointerAt(111, 122))

	sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputText, Text: "hi"})
	for range 2 {
		desktoptest.Next[xproto.KeyPressEvent](t, xc, desktoptest.EventTimeout)
	}
	sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputKey, Key: "Return"})
	desktoptest.Next[xproto.KeyPressEvent](t, xc, desktoptest.EventTimeout)

	if err := r.Channels[api.ChannelInput].SendText(`{"type":"teleport"}`); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, r, api.ChannelInput); m.Type != api.ControlError || m.Error == nil || m.Error.Kind != api.KindInvalidArgument {
		t.Fatalf("answer to a bad message: %+v", m)
	}
}
