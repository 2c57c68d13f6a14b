// Package a11ybus starts a private desktop session's buses: a D-Bus
// session bus that listens in a directory of the caller's only, and the
// accessibility bus on it (at-spi-bus-launcher, which starts the AT-SPI
// registry and, given a display, sets AT_SPI_BUS on its root window).
// The daemon starts one beside its own X server (--xvfb), and the
// accessibility tests (a11ytest) theirs.
package a11ybus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/trycua/cua-spacesd/internal/capped"
	"github.com/trycua/cua-spacesd/internal/procgroup"
)

// Limits of the buses Start starts.
const (
	// StartTimeout bounds each step of the start (the session bus, the
	// launcher's answer); stopTimeout a process's exit after SIGTERM,
	// before SIGKILL.
	StartTimeout = 15 * time.Second
	stopTimeout  = 5 * time.Second
	// logMax is the most of the processes' stderr a Bus keeps (the first
	// bytes: what explains a failed start).
	logMax = 64 << 10
	// maxSocketPath is what a unix socket's path may hold (sun_path, less
	// its NUL).
	maxSocketPath = 107
)

// launcherPaths are where Debian and others install at-spi-bus-launcher.
var launcherPaths = []string{"/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher", "/usr/lib/at-spi2/at-spi-bus-launcher"}

// Launcher answers the path of at-spi-bus-launcher, or "" when it is not
// installed.
func Launcher() string {
	for _, p := range launcherPaths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("at-spi-bus-launcher"); err == nil {
		return p
	}
	return ""
}

// Available answers nil when what Start needs is installed, or why not
// (with how to get it).
func Available() error {
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		return errors.New("dbus-daemon is not installed (apt-get install dbus-daemon)")
	}
	if Launcher() == "" {
		return errors.New("at-spi-bus-launcher is not installed (apt-get install at-spi2-core)")
	}
	return nil
}

// Bus is a session bus and the accessibility bus on it, which Start
// started.
type Bus struct {
	// SessionAddr is the session bus's address, for
	// DBUS_SESSION_BUS_ADDRESS.
	SessionAddr string
	// A11yAddr is the accessibility bus's address, as the session bus's
	// org.a11y.Bus answers it.
	A11yAddr string

	session, launcher *proc
	output            *capped.Buffer
}

// Start starts a session bus whose socket lives in dir (an existing
// directory the caller owns, 0700, and removes after Close), and
// at-spi-bus-launcher on it, with DISPLAY=display when display is set
// (the launcher then sets AT_SPI_BUS on the display's root window). env
// is the processes' environment (nil = the daemon's), less the
// variables of another session (DISPLAY, DBUS_SESSION_BUS_ADDRESS...);
// XAUTHORITY, when the display needs a cookie, comes in env. Start
// returns once the launcher answers the accessibility bus's address;
// ctx bounds the start only.
func Start(ctx context.Context, dir, display string, env []string) (*Bus, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "bus")
	if len(socket) > maxSocketPath {
		return nil, fmt.Errorf("the socket's path %s is longer than a unix socket's %d bytes", socket, maxSocketPath)
	}
	// The launcher puts the accessibility bus's socket in
	// $XDG_RUNTIME_DIR/at-spi: here, so that it is as private as the
	// session bus's, and goes with dir.
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	conf := filepath.Join(dir, "session.conf")
	if err := os.WriteFile(conf, []byte(sessionConf(socket)), 0o600); err != nil {
		return nil, err
	}
	if env == nil {
		env = os.Environ()
	}
	env = cleanEnv(env)
	if display != "" {
		env = append(env, "DISPLAY="+display)
	}
	b := &Bus{SessionAddr: "unix:path=" + socket, output: &capped.Buffer{Max: logMax}}

	bus := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile")
	bus.Env = env
	bus.Dir = dir
	bus.Stdout, bus.Stderr = b.output, b.output
	var err error
	if b.session, err = startProc(bus); err != nil {
		return nil, fmt.Errorf("start dbus-daemon: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	c, err := connect(ctx, b.SessionAddr, b.session)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("dbus-daemon: %w: %s", err, b.Log())
	}
	defer c.Close()

	l := exec.Command(Launcher(), "--launch-immediately", "--a11y=1")
	l.Env = append(env, "DBUS_SESSION_BUS_ADDRESS="+b.SessionAddr, "XDG_RUNTIME_DIR="+run)
	l.Dir = dir
	l.Stdout, l.Stderr = b.output, b.output
	if b.launcher, err = startProc(l); err != nil {
		b.Close()
		return nil, fmt.Errorf("start at-spi-bus-launcher: %w", err)
	}
	if b.A11yAddr, err = waitA11yBus(ctx, c, b.launcher); err != nil {
		b.Close()
		return nil, fmt.Errorf("at-spi-bus-launcher: %w: %s", err, b.Log())
	}
	return b, nil
}

// sessionConf is a session bus that listens on socket only, lets in its
// owner's user alone (EXTERNAL), and activates nothing.
func sessionConf(socket string) string {
	return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=` + socket + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`
}

// cleanEnv is env without the variables of another session.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "NO_AT_BRIDGE", "GTK_MODULES", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// connect connects to the session bus once it takes connections.
func connect(ctx context.Context, addr string, p *proc) (*dbus.Conn, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := dbus.Connect(addr, dbus.WithContext(ctx))
		if err == nil {
			return c, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("exited before %s took a connection", addr)
		case <-ctx.Done():
			return nil, fmt.Errorf("%s took no connection: %w (%v)", addr, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// waitA11yBus asks the session bus's org.a11y.Bus for the accessibility
// bus until the launcher answers.
func waitA11yBus(ctx context.Context, c *dbus.Conn, p *proc) (string, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		var addr string
		err := c.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(cctx, "org.a11y.Bus.GetAddress", 0).Store(&addr)
		cancel()
		if err == nil && addr != "" {
			return addr, nil
		}
		select {
		case <-p.exited:
			return "", errors.New("exited before it answered org.a11y.Bus.GetAddress")
		case <-ctx.Done():
			return "", fmt.Errorf("no answer to org.a11y.Bus.GetAddress: %w (%v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Log is what the buses and the launcher wrote so far (their first
// 64 KiB).
func (b *Bus) Log() string { return string(bytes.TrimSpace([]byte(b.output.String()))) }

// PIDs are the process ids of the session bus and of the launcher (the
// leaders of their process groups).
func (b *Bus) PIDs() []int {
	var out []int
	for _, p := range []*proc{b.session, b.launcher} {
		if p != nil {
			out = append(out, p.leader.PID())
		}
	}
	return out
}

// Close stops the launcher (with the accessibility bus and registry it
// started), then the session bus, and waits for them to exit.
func (b *Bus) Close() {
	if b.launcher != nil {
		b.launcher.close()
	}
	if b.session != nil {
		b.session.close()
	}
}

// proc is a process Start started, in a process group of its own.
type proc struct {
	leader *procgroup.Leader
	exited chan struct{}
	stop   sync.Once
}

func startProc(cmd *exec.Cmd) (*proc, error) {
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{leader: procgroup.New(cmd.Process.Pid), exited: make(chan struct{})}
	go func() { _ = p.leader.Reap(cmd.Wait); close(p.exited) }()
	return p, nil
}

// close stops the process's group (SIGTERM, then SIGKILL if its leader
// lingers) and waits for the leader to exit, then (a bounded while) for
// the rest of its group, which the SIGTERM reached too: the launcher's
// accessibility bus and registry. The signals go through procgroup,
// which refuses them once the leader was reaped.
func (p *proc) close() {
	p.stop.Do(func() {
		_ = p.leader.Signal(syscall.SIGTERM, true)
		deadline := time.After(stopTimeout)
		select {
		case <-p.exited:
		case <-deadline:
			_ = p.leader.Signal(syscall.SIGKILL, true)
			<-p.exited
		}
		// Signal 0 only asks whether the group has members; the
		// kernel gives no one its id while it has.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for syscall.Kill(-p.leader.PID(), 0) == nil {
			select {
			case <-deadline:
				return
			case <-tick.C:
			}
		}
	})
}
