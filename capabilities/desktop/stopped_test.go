package desktop_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// shortWait is the context of a call to a frozen display: the call must
// give up with it.
const shortWait = 200 * time.Millisecond

// answered runs call and fails the test when it does not return within
// desktoptest.EventTimeout (a liveness bound, not a performance assertion: without the
// reply deadlines these calls never return).
func answered(t *testing.T, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(desktoptest.EventTimeout):
		t.Fatalf("%s did not return within %s with the X server stopped", what, desktoptest.EventTimeout)
		return nil
	}
}

func wantKind(t *testing.T, what string, err error, display string, kinds ...api.Kind) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("%s: want an api error of kind %v, got %v", what, kinds, err)
	}
	for _, k := range kinds {
		if ae.Kind == k {
			if !strings.Contains(ae.Message, display) {
				t.Errorf("%s: message %q does not name the display %s", what, ae.Message, display)
			}
			return
		}
	}
	t.Fatalf("%s: want kind %v, got %s: %v", what, kinds, ae.Kind, err)
}

// TestStoppedServer stops (SIGSTOP) the X server under a connected Desktop,
// as a hung server or a client holding XGrabServer would: every call must
// answer with timeout or cancelled within its context (or replyTimeout),
// input calls must not queue behind a stuck one, and once the server runs
// again the next calls work, on a new connection, with no goroutine left
// (a Capturer's included: it tracks damage again on the new connection).
func TestStoppedServer(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // runs last, after the closes
	v := desktoptest.StartVirtual(t, desktoptest.Options{Size: "640x480"})
	display := v.Display()
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	frames := d.NewCapturer(0)
	t.Cleanup(frames.Close)
	ctx := context.Background()

	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"windows", func(ctx context.Context) error { _, err := d.Windows(ctx, ""); return err }},
		{"screenshot", func(ctx context.Context) error { _, _, err := d.Screenshot(ctx, api.ScreenshotRequest{}); return err }},
		{"click", func(ctx context.Context) error {
			_, err := d.Click(ctx, api.ClickRequest{X: 10, Y: 10})
			return err
		}},
		{"key", func(ctx context.Context) error { _, err := d.Key(ctx, "shift+a"); return err }},
		{"capturer frame", func(ctx context.Context) error { frames.RequestFull(); _, err := frames.Next(ctx); return err }},
	}
	for _, c := range calls {
		if err := c.call(ctx); err != nil {
			t.Fatalf("%s before the stop: %v", c.name, err)
		}
	}

	if err := v.Freeze(); err != nil {
		t.Fatalf("SIGSTOP Xvfb: %v", err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := v.Thaw(); err != nil {
				t.Errorf("SIGCONT Xvfb: %v", err)
			}
		}
	}
	t.Cleanup(thaw)

	// A call without a deadline of its own gives up after replyTimeout and
	// drops the connection.
	err := answered(t, "windows without a deadline", func() error { _, err := d.Windows(ctx, ""); return err })
	wantKind(t, "windows without a deadline", err, display, api.KindTimeout)

	// An input call stuck without a deadline must not hold later input
	// calls beyond their own deadlines.
	stuck := make(chan error, 1)
	go func() {
		_, err := d.MoveMouse(ctx, api.MouseMoveRequest{X: 5, Y: 5})
		stuck <- err
	}()
	for _, c := range calls {
		for range 2 { // the first may dial, the second finds the state it left
			err := answered(t, c.name, func() error {
				cctx, cancel := context.WithTimeout(ctx, shortWait)
				defer cancel()
				return c.call(cctx)
			})
			wantKind(t, c.name+" with the server stopped", err, display, api.KindTimeout, api.KindCancelled)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = answered(t, "cancelled click", func() error {
		_, err := d.Click(cctx, api.ClickRequest{X: 10, Y: 10})
		return err
	})
	wantKind(t, "cancelled click", err, display, api.KindCancelled, api.KindTimeout)

	thaw()
	if err := answered(t, "the stuck move", func() error { return <-stuck }); err != nil {
		t.Logf("the move stuck before the thaw answered %v", err)
	}
	for _, c := range calls {
		var err error
		desktoptest.Eventually(t, c.name+" working again after SIGCONT", func() bool {
			cctx, cancel := context.WithTimeout(ctx, desktoptest.EventTimeout)
			defer cancel()
			err = c.call(cctx)
			return err == nil
		})
	}
}
