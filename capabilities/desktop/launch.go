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
)

// LaunchApp starts an app detached from the request, in its own process
// group with DISPLAY set, and optionally waits for its first window.
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
	// Not CommandContext: the app outlives the request that started it.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = envWithDisplay(d.display, req.Env)
	cmd.Dir = req.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
			return nil, api.Errorf(api.KindNotFound, "launch %q: %w", argv[0], err)
		}
		return nil, api.Errorf(api.KindInvalidArgument, "launch %q: %w", argv[0], err)
	}
	// Reap the app whenever it exits, so it never lingers as a zombie; the
	// wait for its window learns of a failed exit at once.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	res := &api.LaunchResult{PID: cmd.Process.Pid}
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
	w, err := x.waitForWindowOf(wctx, res.PID, exited)
	if err != nil {
		var ex *appExited
		switch {
		case errors.As(err, &ex):
			return nil, api.Errorf(api.KindEnv, "launched %q as pid %d, but it ended (%v) before it showed a window", argv[0], res.PID, ex.err)
		case ctx.Err() != nil:
			return nil, api.Errorf(api.KindCancelled, "launch %q: %w", argv[0], err)
		case errors.Is(err, errLauncherDone):
			return nil, api.Errorf(api.KindTimeout, "launched %q as pid %d; it exited, and no window of its process group appeared within %s", argv[0], res.PID, wait)
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		}
		return nil, api.Errorf(api.KindTimeout, "launched %q as pid %d, but no window of its process group appeared within %s (it keeps running)", argv[0], res.PID, wait)
	}
	res.Window = w
	return res, nil
}

// appExited says the launched process failed before a window appeared.
type appExited struct{ err error }

func (e *appExited) Error() string { return "the app ended: " + e.err.Error() }
