package daemon_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/proctest"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// waitFor polls ok until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	desktoptest.EventuallyWithin(t, what, 30*time.Second, ok)
}

// TestLaunchedAppIsAProcess: launch_app starts the app through the process
// manager: it is listed (tag launch_app) with what it started, contained
// with it, and a KILL of its process ends the app and its setsid child,
// whose window goes with it. Before, launched apps lived outside the
// manager: unlisted, and unkillable but by pid.
func TestLaunchedAppIsAProcess(t *testing.T) {
	t.Parallel()
	desktoptest.Require(t, "xterm")
	display := desktoptest.Start(t, desktoptest.Options{Size: "800x600"})
	c := spacesdtest.Start(t, spacesdtest.Options{Display: display}).Client
	ctx := t.Context()
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if caps.Limits.ProcessContainment == "off" {
		testenv.Missing(t, "process containment is off: %s", caps.Limits.ProcessContainmentNote)
	}
	child := strconv.Itoa(300000 + rand.IntN(600000))
	title := fmt.Sprintf("launched-%d", rand.Uint32())
	res, err := c.LaunchApp(ctx, api.LaunchRequest{
		Shell:         fmt.Sprintf("exec xterm -T %s -e sh -c 'setsid sleep %s & wait'", title, child),
		WaitForWindow: true, TimeoutMS: 60_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ProcessID == "" || res.Window == nil || res.Window.Title != title {
		t.Fatalf("launch answered %+v (window %+v)", res, res.Window)
	}
	var sleeper []int
	waitFor(t, "the app's setsid child", func() bool { sleeper = proctest.Live("sleep\x00" + child); return len(sleeper) == 1 })
	list, err := c.Processes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(p api.ProcessInfo) bool { return p.ID == res.ProcessID })
	if i < 0 || list[i].Tag != desktop.LaunchTag || list[i].PID != res.PID || !slices.Contains(list[i].Descendants, sleeper[0]) {
		t.Fatalf("processes %+v; want the app (pid %d, tag %s) with its setsid child %d", list, res.PID, desktop.LaunchTag, sleeper[0])
	}
	if err := c.Signal(ctx, res.ProcessID, "KILL"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the app and its child to die", func() bool { return !proctest.Alive(res.PID) && !proctest.Alive(sleeper[0]) })
	waitFor(t, "its window to go", func() bool {
		ws, err := c.Windows(context.Background(), "")
		return err == nil && !slices.ContainsFunc(ws, func(w api.Window) bool { return w.Title == title })
	})
}

// TestChildrenGetTheDisplay: a daemon with a display hands it to what it
// runs as DISPLAY (unless the request sets one), so `xterm &` opens where
// the desktop features look. Before, a daemon that started its own Xvfb
// ran children without DISPLAY.
func TestChildrenGetTheDisplay(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{Display: ":4242"}).Client
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{{nil, ":4242\n"}, {map[string]string{"DISPLAY": ":1"}, ":1\n"}} {
		res, err := c.Exec(t.Context(), api.ExecRequest{Command: api.Command{Shell: "echo $DISPLAY", Env: tc.env}})
		if err != nil || res.Stdout != tc.want {
			t.Errorf("exec with env %v: %+v, %v; want %q", tc.env, res, err, tc.want)
		}
	}
}
