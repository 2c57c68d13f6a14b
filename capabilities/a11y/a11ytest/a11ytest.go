// Package a11ytest starts, for one test, what the accessibility tests need:
// a private X display (desktoptest), a private D-Bus session bus, the
// accessibility bus on it (at-spi-bus-launcher, which starts the AT-SPI
// registry), and a small GTK 3 program (Python) whose widgets the tests
// read and act on. Everything stops when the test ends; each test has its
// own buses and display, so tests run side by side.
package a11ytest

import (
	"bufio"
	"context"
	_ "embed"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ybus"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// StartTimeout bounds each start-up step (a bus, the launcher, the app).
const StartTimeout = a11ybus.StartTimeout

//go:embed app.py
var appSource string

// Require skips the test (fails it under CI=true) when a part is missing:
// Xvfb and openbox, dbus-daemon, at-spi-bus-launcher, Python with GTK 3.
func Require(t testing.TB) {
	t.Helper()
	desktoptest.Require(t, "dbus-daemon")
	if a11ybus.Launcher() == "" {
		testenv.Missing(t, "at-spi-bus-launcher is not installed (at-spi2-core; the accessibility tests need it)")
	}
	if python() == "" {
		testenv.Missing(t, "no python3 with GTK 3 bindings (python3-gi, gir1.2-gtk-3.0; the accessibility tests need them)")
	}
}

var (
	pythonOnce sync.Once
	pythonPath string
)

// python answers a python3 that imports GTK 3 (Debian's, before one a
// version manager put first on PATH), or "".
func python() string {
	pythonOnce.Do(func() {
		cands := []string{"/usr/bin/python3"}
		if p, err := exec.LookPath("python3"); err == nil {
			cands = append(cands, p)
		}
		for _, p := range cands {
			cmd := exec.Command(p, "-c", `import gi; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk`)
			if cmd.Run() == nil {
				pythonPath = p
				return
			}
		}
	})
	return pythonPath
}

// Options adjust the environment.
type Options struct {
	// Size is the display's "WIDTHxHEIGHT"; "" = desktoptest's default.
	Size string
	// NoRootProperty leaves AT_SPI_BUS off the root window, so a client
	// must ask the session bus.
	NoRootProperty bool
}

// Env is one test's desktop session with an accessibility bus.
type Env struct {
	Display string
	// SessionBus is the address of the private session bus.
	SessionBus string
	// A11yBus is the accessibility bus's address.
	A11yBus string
	dir     string
}

// Start starts the display, the session bus and the accessibility bus.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	Require(t)
	e := &Env{Display: desktoptest.Start(t, desktoptest.Options{Size: opts.Size})}
	// A short directory: a socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "a11y")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e.dir = dir
	b, err := a11ybus.Start(t.Context(), dir, e.Display, baseEnv())
	if err != nil {
		t.Fatalf("a11ytest: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		if t.Failed() && b.Log() != "" {
			t.Logf("the buses wrote:\n%s", b.Log())
		}
	})
	e.SessionBus, e.A11yBus = b.SessionAddr, b.A11yAddr
	if !opts.NoRootProperty {
		setRootProperty(t, e.Display, e.A11yBus)
	} else {
		deleteRootProperty(t, e.Display)
	}
	return e
}

// baseEnv is the environment without the variables a test sets itself.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "NO_AT_BRIDGE", "GTK_MODULES", "WAYLAND_DISPLAY":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// start starts cmd in a process group of its own, killed whole (with what
// it started: the launcher's bus and registry) when the test ends.
func start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("a11ytest: start %s: %v", cmd.Path, err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waited
		}
		// What it started may outlive it a moment in its group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
}

// setRootProperty sets AT_SPI_BUS on the display's root window, as the
// launcher does in a desktop session.
func setRootProperty(t testing.TB, display, addr string) {
	t.Helper()
	withRoot(t, display, func(c *xgb.Conn, root xproto.Window, atom xproto.Atom) error {
		return xproto.ChangePropertyChecked(c, xproto.PropModeReplace, root, atom, xproto.AtomString, 8, uint32(len(addr)), []byte(addr)).Check()
	})
}

func deleteRootProperty(t testing.TB, display string) {
	t.Helper()
	withRoot(t, display, func(c *xgb.Conn, root xproto.Window, atom xproto.Atom) error {
		return xproto.DeletePropertyChecked(c, root, atom).Check()
	})
}

func withRoot(t testing.TB, display string, fn func(*xgb.Conn, xproto.Window, xproto.Atom) error) {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("a11ytest: connect %s: %v", display, err)
	}
	defer c.Close()
	root := xproto.Setup(c).DefaultScreen(c).Root
	a, err := xproto.InternAtom(c, false, uint16(len("AT_SPI_BUS")), "AT_SPI_BUS").Reply()
	if err != nil {
		t.Fatalf("a11ytest: intern AT_SPI_BUS: %v", err)
	}
	if err := fn(c, root, a.Atom); err != nil {
		t.Fatalf("a11ytest: AT_SPI_BUS on the root window: %v", err)
	}
}

// App is the test's GTK program.
type App struct {
	PID      int
	WindowID uint32
	lines    chan string
	mu       sync.Mutex
	seen     []string
}

// StartApp starts the GTK program on the environment's display and bus,
// and answers once its window is mapped.
func (e *Env) StartApp(t testing.TB) *App {
	t.Helper()
	return e.StartAppWith(t, AppOptions{})
}

// AppOptions adjust the GTK program.
type AppOptions struct {
	// Buttons adds that many more buttons ("B0", "B1"...) in a scrolled
	// grid, for benchmarks.
	Buttons int
}

// StartAppWith is StartApp with options.
func (e *Env) StartAppWith(t testing.TB, opts AppOptions) *App {
	t.Helper()
	src := filepath.Join(e.dir, "app.py")
	if err := os.WriteFile(src, []byte(appSource), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python(), src)
	cmd.Env = append(baseEnv(), "DISPLAY="+e.Display, "DBUS_SESSION_BUS_ADDRESS="+e.SessionBus,
		"GTK_MODULES=gail:atk-bridge", "ACCESSIBILITY_ENABLED=1", "GSETTINGS_BACKEND=memory", "GTK_THEME=Adwaita",
		"A11Y_TEST_BUTTONS="+strconv.Itoa(opts.Buttons))
	cmd.Stderr = logOnFailure(t, "the GTK program")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start(t, cmd)
	a := &App{PID: cmd.Process.Pid, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	a.WaitLine(t, "ready")
	d := desktop.New(desktop.Options{Display: e.Display})
	defer d.Close()
	deadline := time.Now().Add(StartTimeout)
	for a.WindowID == 0 {
		ws, _ := d.Windows(context.Background(), "")
		for _, w := range ws {
			if w.PID == a.PID && w.Title == "A11y Test Window" && w.Bounds.Width > 0 {
				a.WindowID = w.WindowID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a11ytest: the GTK window of pid %d did not map (windows: %+v)", a.PID, ws)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return a
}

// WaitLine waits for a line of the program's output that contains want,
// and answers it.
func (a *App) WaitLine(t testing.TB, want string) string {
	t.Helper()
	timeout := time.After(StartTimeout)
	for {
		select {
		case l, ok := <-a.lines:
			if !ok {
				t.Fatalf("a11ytest: the GTK program exited before printing %q (it printed %q)", want, a.Lines())
			}
			a.mu.Lock()
			a.seen = append(a.seen, l)
			a.mu.Unlock()
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("a11ytest: the GTK program did not print %q (it printed %q)", want, a.Lines())
		}
	}
}

// Lines are the lines WaitLine read so far.
func (a *App) Lines() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// logOnFailure is a writer whose text the test logs when it fails: the
// buses' and the toolkit's warnings are noise otherwise.
func logOnFailure(t testing.TB, who string) io.Writer {
	var buf testenv.SyncBuffer
	t.Cleanup(func() {
		if t.Failed() && buf.String() != "" {
			t.Logf("%s wrote:\n%s", who, buf.String())
		}
	})
	return &buf
}
