package streamsvc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
)

// TestWindowTicketNamesItsWindow: a window's ticket opens the window it
// was minted for, not a later window that got the same X id. The id comes
// back as X hands it out: the window's client goes, and the next client in
// its slot allocates the same id. The open stream ends with its window;
// the old ticket is refused not_found on the new window; a ticket minted
// now opens it.
func TestWindowTicketNamesItsWindow(t *testing.T) {
	e := start(t, "640x480")
	first, win := e.showWindow(t)
	tk := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
	r, _ := e.view(t, tk.OfferPath, tk.Ticket, allChannels)
	r.NextFrame(t, true, frameTimeout)

	first.Close() // the window is destroyed with its client
	title := desktoptest.RandomWord(t)
	var next *desktoptest.XClient
	// The server frees the old client's slot when it has seen it go: a
	// client that came first gets another slot, and is closed.
	for range maxReuseTries {
		xc := desktoptest.NewXClient(t, e.display, title, 200, 200, []desktoptest.Fill{desktoptest.Blue})
		if uint32(xc.Win) == win.WindowID {
			next = xc
			break
		}
		xc.Close()
	}
	if next == nil {
		t.Fatalf("no new window got the id %d back in %d clients", win.WindowID, maxReuseTries)
	}
	eventually(t, "the stream of the closed window ended", func() bool {
		s := r.PC.ConnectionState()
		return s == webrtc.PeerConnectionStateClosed || s == webrtc.PeerConnectionStateFailed || s == webrtc.PeerConnectionStateDisconnected
	})
	eventually(t, "the new window listed with the old id", func() bool {
		ws, err := e.d.Client.Windows(t.Context(), title)
		return err == nil && len(ws) == 1 && ws[0].WindowID == win.WindowID && ws[0].OnScreen
	})

	res, err := rtctest.Post(t.Context(), e.d.URL+tk.OfferPath, tk.Ticket, rtctest.New(t, allChannels).Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusNotFound || res.Error == nil || res.Error.Kind != api.KindNotFound || !strings.Contains(res.Error.Message, "closed") {
		t.Fatalf("the closed window's ticket on the new window: %d %+v, want 404 not_found saying the window was closed", res.Status, res.Error)
	}
	fresh := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
	if fresh.Ticket == tk.Ticket {
		t.Fatal("the new window's ticket is the old window's")
	}
	r2, _ := e.view(t, fresh.OfferPath, fresh.Ticket, allChannels)
	r2.NextFrame(t, true, frameTimeout)
}

// maxReuseTries bounds the clients opened until one gets a closed
// window's id back (the first one does, unless it came before the server
// freed the slot).
const maxReuseTries = 10
