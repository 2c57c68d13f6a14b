package desktop_test

import (
	"context"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestWindowRef: a window's generation holds while it lives (asked again,
// the same), ends when it is destroyed (its gone channel closes, a check
// answers not_found), and a new window that got its id back has another,
// which the old ref does not pass for.
func TestWindowRef(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	if _, err := d.Windows(ctx, ""); err != nil { // connect before the test client
		t.Fatal(err)
	}
	xc, win := showWindow(t, d, display)
	ref, err := d.WindowRef(ctx, win.WindowID)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := d.WindowRef(ctx, win.WindowID); err != nil || again != ref {
		t.Fatalf("the window asked again: %+v %v, want %+v", again, err, ref)
	}
	if err := d.CheckWindow(ctx, ref); err != nil {
		t.Fatalf("check of a live window: %v", err)
	}
	gone, err := d.WindowGone(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}

	xc.Close()
	select {
	case <-gone:
	case <-time.After(desktoptest.EventTimeout):
		t.Fatal("the gone channel of a destroyed window stayed open")
	}
	var next *desktoptest.XClient
	for range 10 { // the first client gets the id back, unless it came before the server freed the slot
		c := desktoptest.NewXClient(t, display, desktoptest.RandomWord(t), 100, 100, []desktoptest.Fill{desktoptest.Blue})
		if uint32(c.Win) == ref.ID {
			next = c
			break
		}
		c.Close()
	}
	if next == nil {
		t.Fatalf("no new window got the id %d back", ref.ID)
	}
	if err := d.CheckWindow(ctx, ref); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("check of the destroyed window's ref with its id reused: %v, want not_found", err)
	}
	desktoptest.Eventually(t, "the new window listed", func() bool {
		_, err := d.Window(ctx, ref.ID)
		return err == nil
	})
	now, err := d.WindowRef(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if now.Gen == ref.Gen {
		t.Fatalf("the new window of id %d has the old one's generation %d", ref.ID, ref.Gen)
	}
	if _, err := d.WindowGone(ctx, ref); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("gone channel of the old ref: %v, want not_found", err)
	}
	if err := d.CheckWindow(ctx, now); err != nil {
		t.Fatalf("check of the new window: %v", err)
	}
}
