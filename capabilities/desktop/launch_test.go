package desktop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestLaunchWaitsForForkedWindow launches through a shell that starts the
// app as its child, as launcher scripts do: the window belongs to the
// child, a member of the launched process group, and the wait must find
// it, whether the launcher stays or exits at once.
func TestLaunchWaitsForForkedWindow(t *testing.T) {
	desktoptest.Require(t, "xterm")
	display := desktoptest.Start(t, desktoptest.Options{Size: "800x600"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	for _, tc := range []struct{ name, shell string }{
		{"launcher waits", "xterm -T %s -e sleep 600 & wait"},
		{"launcher exits", "xterm -T %s -e sleep 600 &"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			title := desktoptest.RandomWord(t)
			res, err := d.LaunchApp(ctx, api.LaunchRequest{
				Shell: strings.Replace(tc.shell, "%s", title, 1), WaitForWindow: true, TimeoutMS: 60_000,
			})
			if err != nil {
				t.Fatalf("launch: %v", err)
			}
			t.Cleanup(func() {
				if res.Window != nil {
					_ = d.CloseWindow(context.Background(), res.Window.WindowID)
				}
			})
			if res.Window == nil || res.Window.Title != title || res.Window.PID == 0 {
				t.Fatalf("launch answered %+v (window %+v); want the xterm titled %s", res, res.Window, title)
			}
		})
	}
}

// TestLaunchFailsWhenTheAppExits: an app that fails before it shows a
// window is reported as such, not waited for until the timeout and then
// said to keep running.
func TestLaunchFailsWhenTheAppExits(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	_, err := d.LaunchApp(context.Background(), api.LaunchRequest{
		Shell: "echo no display for you >&2; exit 3", WaitForWindow: true, TimeoutMS: 60_000,
	})
	e := api.AsError(err)
	if e == nil || e.Kind != api.KindEnv || !strings.Contains(e.Message, "exit status 3") {
		t.Fatalf("launch of a failing app: %#v; want env naming exit status 3", err)
	}
}
