package desktop

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

const (
	// defaultLaunchWait bounds the wait for a launched app's window.
	defaultLaunchWait = 15 * time.Second
	maxLaunchWait     = 5 * time.Minute
	// LaunchTag is the tag of the processes LaunchApp starts through a
	// Launcher, so a client finds them in the daemon's process list.
	LaunchTag = "launch_app"
)

// Launcher starts the apps LaunchApp launches. The daemon hands in its
// process manager (spacesd/daemon), so that a launched app is a process
// like any other: contained in its own cgroup with everything it starts,
// listed, and killable.
type Launcher interface {
	Launch(ctx context.Context, app AppSpec) (LaunchedApp, error)
}

// AppSpec is an app to launch.
type AppSpec struct {
	Argv []string
	// Env is laid over the launcher's environment.
	Env map[string]string
	Cwd string
	// Display is the app's DISPLAY unless Env sets one.
	Display string
}

// LaunchedApp is an app a Launcher started.
type LaunchedApp interface {
	// ID is the app's process id in the daemon ("" outside a process manager).
	ID() string
	PID() int
	// Holds reports whether pid is the app or a process it started (its
	// cgroup, or its process group).
	Holds(pid int) bool
	// Exited is closed when the app's process has exited; Err then says
	// how: nil for success, else a reason ("exit status 3").
	Exited() <-chan struct{}
	Err() error
}

// LaunchApp starts an app detached from the request, with DISPLAY set,
// through the Desktop's Launcher, and optionally waits for its first
// window: one whose process belongs to the app's tree.
func (d *Desktop) LaunchApp(ctx context.Context, req api.LaunchRequest) (*api.LaunchResult, error) {
	if (len(req.Argv) == 0) == (req.Shell == "") {
		return nil, api.Errorf(api.KindInvalidArgument, "give exactly one of argv and shell")
	}
	if req.TimeoutMS < 0 || time.Duration(req.TimeoutMS)*time.Millisecond > maxLaunchWait {
		return nil, api.Errorf(api.KindInvalidArgument, "timeout_ms %d is out of range 0-%d", req.TimeoutMS, maxLaunchWait.Milliseconds())
	}
	x, err := d.use(ctx, api.FeatureLaunchApp)
	if err != nil {
		return nil, err
	}
	argv := req.Argv
	if req.Shell != "" {
		argv = []string{"/bin/sh", "-c", req.Shell}
	}
	// The app outlives the request that started it: the launcher gets no
	// context of the request's to kill it with.
	app, err := d.launcher.Launch(context.WithoutCancel(ctx), AppSpec{Argv: argv, Env: req.Env, Cwd: req.Cwd, Display: d.display})
	if err != nil {
		return nil, err
	}
	res := &api.LaunchResult{PID: app.PID(), ProcessID: app.ID()}
	if !req.WaitForWindow {
		return res, nil
	}
	if x.wm(ctx) == "" {
		return res, api.CapabilityMissing(api.FeatureWindows, d.Status(ctx)[api.FeatureWindows].Limitation)
	}
	wait := defaultLaunchWait
	if req.TimeoutMS > 0 {
		wait = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// The app's exit, as the wait takes it; this goroutine ends with the wait.
	exited := make(chan error, 1)
	go func() {
		select {
		case <-app.Exited():
			exited <- app.Err()
		case <-wctx.Done():
		}
	}()
	w, err := x.waitForWindowOf(wctx, res.PID, app.Holds, exited)
	if err != nil {
		var ex *appExited
		switch {
		case errors.As(err, &ex):
			return nil, api.Errorf(api.KindEnv, "launched %q as pid %d, but it ended (%v) before it showed a window", argv[0], res.PID, ex.err)
		case ctx.Err() != nil:
			return nil, api.Errorf(api.KindCancelled, "launch %q: %w", argv[0], err)
		case errors.Is(err, errLauncherDone):
			return nil, api.Errorf(api.KindTimeout, "launched %q as pid %d; it exited, and no window of what it started appeared within %s", argv[0], res.PID, wait)
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		}
		return nil, api.Errorf(api.KindTimeout, "launched %q as pid %d, but no window of it or what it started appeared within %s (it keeps running)", argv[0], res.PID, wait)
	}
	res.Window = w
	return res, nil
}

// appExited says the launched process failed before a window appeared.
type appExited struct{ err error }

func (e *appExited) Error() string { return "the app ended: " + e.err.Error() }

// groupLauncher is the Launcher of a Desktop given none: the app runs in a
// process group of its own, outside any process manager (a Desktop used
// without the daemon, as in this package's tests).
type groupLauncher struct{}

func (groupLauncher) Launch(_ context.Context, app AppSpec) (LaunchedApp, error) {
	cmd := exec.Command(app.Argv[0], app.Argv[1:]...)
	cmd.Env = envWithDisplay(app.Display, app.Env)
	cmd.Dir = app.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
			return nil, api.Errorf(api.KindNotFound, "launch %q: %w", app.Argv[0], err)
		}
		return nil, api.Errorf(api.KindInvalidArgument, "launch %q: %w", app.Argv[0], err)
	}
	a := &groupApp{pid: cmd.Process.Pid, exited: make(chan struct{})}
	// Reap the app whenever it exits, so it never lingers as a zombie.
	go func() {
		a.err = cmd.Wait()
		close(a.exited)
	}()
	return a, nil
}

type groupApp struct {
	pid    int
	exited chan struct{}
	err    error // set before exited closes
}

func (a *groupApp) ID() string { return "" }
func (a *groupApp) PID() int   { return a.pid }
func (a *groupApp) Holds(pid int) bool {
	return pid == a.pid || (pid > 0 && inProcessGroup(pid, a.pid))
}
func (a *groupApp) Exited() <-chan struct{} { return a.exited }
func (a *groupApp) Err() error              { return a.err }
