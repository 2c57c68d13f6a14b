package desktop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/jezek/xgb/xproto"
	"github.com/trycua/cua-spacesd/internal/procgroup"
)

const (
	// virtualStartTimeout bounds the start of Xvfb and of the window manager.
	virtualStartTimeout = 15 * time.Second
	// DefaultVirtualSize is the screen of a virtual display unless asked.
	DefaultVirtualSize = "1920x1080"
)

// VirtualOptions configure StartVirtual.
type VirtualOptions struct {
	// Size is "WIDTHxHEIGHT"; "" = DefaultVirtualSize.
	Size string
	// NoWindowManager skips openbox (for tests of a bare display).
	NoWindowManager bool
	// NoComposite starts Xvfb without the Composite extension (for tests
	// of the capture without it).
	NoComposite bool
	// NoDamage starts Xvfb without the DAMAGE extension (for tests of
	// captures that cannot know what changed).
	NoDamage bool
	// Xauthority, when set, is the file Xvfb takes its cookies from
	// (-auth): a client is then let in only with one of them. The window
	// manager reads it too (XAUTHORITY), so it must then hold an entry for
	// the display or for every display of the host.
	Xauthority string
	Logger     *slog.Logger
}

// Virtual is an Xvfb (and openbox) the daemon or a test started.
type Virtual struct {
	display string
	xvfb    *procgroup.Leader
	wm      *procgroup.Leader
	xvfbEnd chan struct{}
}

// VirtualAvailable reports whether Xvfb is installed.
func VirtualAvailable() bool {
	_, err := exec.LookPath("Xvfb")
	return err == nil
}

// StartVirtual starts Xvfb on a free display number (Xvfb picks it itself
// and tells it through -displayfd, so parallel starts never collide) and,
// unless told not to, openbox on it; it returns once both are ready.
func StartVirtual(ctx context.Context, opts VirtualOptions) (*Virtual, error) {
	if opts.Size == "" {
		opts.Size = DefaultVirtualSize
	}
	xvfbPath, err := exec.LookPath("Xvfb")
	if err != nil {
		return nil, fmt.Errorf("Xvfb is not installed (apt-get install xvfb): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, virtualStartTimeout)
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	composite := "+extension"
	if opts.NoComposite {
		composite = "-extension"
	}
	args := []string{"-displayfd", "3", "-screen", "0", opts.Size + "x24",
		"-nolisten", "tcp", "-noreset", composite, "COMPOSITE", "+extension", "XTEST"}
	if opts.NoDamage {
		args = append(args, "-extension", "DAMAGE")
	}
	if opts.Xauthority != "" {
		args = append(args, "-auth", opts.Xauthority)
	}
	xvfb := exec.Command(xvfbPath, args...)
	xvfb.ExtraFiles = []*os.File{w}
	xvfb.SysProcAttr = childProcAttr()
	if err := xvfb.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start Xvfb: %w", err)
	}
	w.Close()
	v := &Virtual{xvfb: procgroup.New(xvfb.Process.Pid), xvfbEnd: make(chan struct{})}
	go func() { _ = v.xvfb.Reap(xvfb.Wait); close(v.xvfbEnd) }()
	num := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		num <- strings.TrimSpace(line)
	}()
	select {
	case n := <-num:
		if n == "" {
			v.Close()
			return nil, errors.New("Xvfb exited before it opened a display")
		}
		v.display = ":" + n
	case <-ctx.Done():
		v.Close()
		return nil, fmt.Errorf("Xvfb did not open a display within %s", virtualStartTimeout)
	}
	if opts.NoWindowManager {
		return v, nil
	}
	obPath, err := exec.LookPath("openbox")
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("openbox is not installed (apt-get install openbox): %w", err)
	}
	wm := exec.Command(obPath, "--sm-disable")
	var extra map[string]string
	if opts.Xauthority != "" {
		extra = map[string]string{"XAUTHORITY": opts.Xauthority}
	}
	wm.Env = envWithDisplay(v.display, extra)
	wm.SysProcAttr = childProcAttr()
	if err := wm.Start(); err != nil {
		v.Close()
		return nil, fmt.Errorf("start openbox: %w", err)
	}
	v.wm = procgroup.New(wm.Process.Pid)
	go func() { _ = v.wm.Reap(wm.Wait) }()
	if err := waitForWM(ctx, v.display, opts.Xauthority); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// waitForWM waits until the window manager manages windows. Openbox
// announces itself (_NET_SUPPORTING_WM_CHECK) before it handles map
// requests, and drops the ones that come in between; so readiness is a probe
// window that shows up in _NET_CLIENT_LIST, mapped again until it does.
func waitForWM(ctx context.Context, display, xauthority string) error {
	c, sock, err := dialX(ctx, display, xauthority)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", display, err)
	}
	// The server frees the probe window with the connection.
	defer closeAndWait(c, sock)
	screen := xproto.Setup(c).DefaultScreen(c)
	name := "_NET_CLIENT_LIST"
	a, err := xproto.InternAtom(c, false, uint16(len(name)), name).Reply()
	if err != nil {
		return err
	}
	id, err := c.NewId()
	if err != nil {
		return err
	}
	probe := xproto.Window(id)
	if err := xproto.CreateWindowChecked(c, 0, probe, screen.Root, 0, 0, 1, 1, 0,
		xproto.WindowClassInputOutput, 0, 0, nil).Check(); err != nil {
		return fmt.Errorf("create the probe window: %w", err)
	}
	defer xproto.DestroyWindow(c, probe)
	managed := func() bool {
		r, err := xproto.GetProperty(c, false, screen.Root, a.Atom, xproto.AtomWindow, 0, 1<<16).Reply()
		if err != nil || r.Format != 32 {
			return false
		}
		for i := 0; i+4 <= len(r.Value); i += 4 {
			if xproto.Window(uint32(r.Value[i])|uint32(r.Value[i+1])<<8|uint32(r.Value[i+2])<<16|uint32(r.Value[i+3])<<24) == probe {
				return true
			}
		}
		return false
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for n := 0; ; n++ {
		if n%15 == 0 { // (re)map every 300 ms until the WM takes it
			xproto.UnmapWindow(c, probe)
			xproto.MapWindow(c, probe)
		}
		if managed() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("window manager did not start on %s within %s", display, virtualStartTimeout)
		case <-t.C:
		}
	}
}

// Display is the display name (":N").
func (v *Virtual) Display() string { return v.display }

// Freeze stops the X server (SIGSTOP) without ending it, so that tests can
// see how clients cope with a server that no longer answers; Thaw resumes
// it. Through procgroup, so never a reaped pid.
func (v *Virtual) Freeze() error { return v.xvfb.Signal(syscall.SIGSTOP, false) }

// Thaw resumes an X server stopped by Freeze.
func (v *Virtual) Thaw() error { return v.xvfb.Signal(syscall.SIGCONT, false) }

// Close stops the window manager and Xvfb and waits for Xvfb to end. The
// signals go through procgroup, which refuses them once a process was
// reaped: its pid may by then belong to someone else.
func (v *Virtual) Close() {
	if v.wm != nil {
		_ = v.wm.Signal(syscall.SIGTERM, true)
	}
	_ = v.xvfb.Signal(syscall.SIGTERM, true)
	_ = v.xvfb.Signal(syscall.SIGCONT, false) // a frozen server must see the TERM
	select {
	case <-v.xvfbEnd:
	case <-time.After(5 * time.Second):
		_ = v.xvfb.Signal(syscall.SIGKILL, true)
		<-v.xvfbEnd
	}
}
