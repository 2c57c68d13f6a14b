package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ybus"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// The daemon's own display (--xvfb) lets in only who holds its cookie: the
// desktop features and the processes the daemon starts do; an X client of
// another user of the machine, which has not the cookie, is refused.
func TestXvfbDisplayNeedsItsCookie(t *testing.T) {
	desktoptest.Require(t, "xdpyinfo")
	bin := buildDaemon(t)
	tok := "xvfb-token-4c1e"
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token", tok, "--xvfb", "--display", "")
	cmd.Env = append(os.Environ(), "DISPLAY=", "XAUTHORITY=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr, logged := listenAddrOf(t, stderr)
	_, rest, ok := strings.Cut(logged, `"display":"`)
	display, _, _ := strings.Cut(rest, `"`)
	if !ok || display == "" {
		t.Fatalf("no display in the daemon's log:\n%s", logged)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	// The desktop uses its display.
	if _, _, err := c.Screenshot(ctx, api.ScreenshotRequest{}); err != nil {
		t.Fatalf("screenshot of the daemon's own display: %v", err)
	}
	// A process the daemon starts gets DISPLAY and the cookie.
	res, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"xdpyinfo"}}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("xdpyinfo started by the daemon: %+v, %v", res, err)
	}
	// Another client of the machine, without the cookie, is refused.
	out, err := exec.CommandContext(ctx, "xdpyinfo", "-display", display).CombinedOutput()
	if err == nil {
		t.Fatalf("a client without the cookie reached %s:\n%s", display, out)
	}
	// The cookie lives where only the daemon's user reads it, and goes
	// with the daemon.
	env, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: `printf %s "$XAUTHORITY"`}})
	if err != nil || env.Stdout == "" {
		t.Fatalf("XAUTHORITY of a child: %+v, %v", env, err)
	}
	fi, err := os.Stat(env.Stdout)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the cookie file %s: %v %v", env.Stdout, fi, err)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if _, err := os.Stat(env.Stdout); !os.IsNotExist(err) {
		t.Errorf("the cookie file %s outlived the daemon: %v", env.Stdout, err)
	}
}

// The daemon's own display (--xvfb) has its own sound: a private
// PulseAudio with the null sink "cua" as its default sink, which the
// stream captures (desktop_audio) and every process the daemon starts
// plays into (PULSE_SERVER); reachable by the daemon's user alone, and
// gone with the daemon.
func TestXvfbStartsItsSound(t *testing.T) {
	desktoptest.Require(t)
	audiotest.Require(t)
	bin := buildDaemon(t)
	tok := "xvfb-sound-token-9d2a"
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token", tok, "--xvfb", "--display", "")
	cmd.Env = append(os.Environ(), "DISPLAY=", "XAUTHORITY=", "PULSE_SERVER=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr, logged := listenAddrOf(t, stderr)
	if !strings.Contains(logged, "started a sound server") {
		t.Fatalf("the daemon started no sound server:\n%s", logged)
	}
	pulse := childrenNamed(t, cmd.Process.Pid, "pulseaudio")
	if len(pulse) != 1 {
		t.Fatalf("the daemon's pulseaudio processes: %v, want one", pulse)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := caps.Supports(api.FeatureDesktopAudio); !ok {
		t.Fatalf("desktop_audio unsupported under --xvfb: %s\n%s", why, logged)
	}
	// A process the daemon starts plays into the Space's sink.
	env, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: `printf %s "$PULSE_SERVER"`}})
	if err != nil || !strings.HasPrefix(env.Stdout, "unix:/") {
		t.Fatalf("PULSE_SERVER of a child: %+v, %v", env, err)
	}
	socket := strings.TrimPrefix(env.Stdout, "unix:")
	for _, dir := range []string{filepath.Dir(socket), filepath.Dir(filepath.Dir(socket))} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("the sound server's directory %s: %v %v, want mode 0700", dir, fi, err)
		}
	}
	info, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"pactl", "info"}}})
	if err != nil || info.ExitCode != 0 || !strings.Contains(info.Stdout, "Default Sink: cua\n") {
		t.Fatalf("pactl info started by the daemon: %+v, %v", info, err)
	}

	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if alive(pulse[0], "pulseaudio") {
		t.Errorf("the daemon's pulseaudio (pid %d) outlived it", pulse[0])
	}
	if _, err := os.Stat(filepath.Dir(socket)); !os.IsNotExist(err) {
		t.Errorf("the sound server's directory %s outlived the daemon: %v", filepath.Dir(socket), err)
	}
}

// childrenNamed lists the children of pid whose command is name (Linux's
// /proc).
func childrenNamed(t *testing.T, pid int, name string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) > 1 && string(stat[open+1:end]) == name && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid is a process (not a zombie) named name.
func alive(pid int, name string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	return strings.Contains(string(stat), "("+name+")") && !strings.Contains(string(stat), ") Z ")
}

// A daemon given a sound server (PULSE_SERVER) starts none of its own
// under --xvfb: it and its children use the one it was given.
func TestXvfbKeepsTheGivenSoundServer(t *testing.T) {
	desktoptest.Require(t)
	audiotest.Require(t)
	bin := buildDaemon(t)
	tok := "xvfb-given-sound-token-51f0"
	given := "unix:" + filepath.Join(t.TempDir(), "no-such-pulse")
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token", tok, "--xvfb", "--display", "")
	cmd.Env = append(os.Environ(), "DISPLAY=", "XAUTHORITY=", "PULSE_SERVER="+given)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr, logged := listenAddrOf(t, stderr)
	if pulse := childrenNamed(t, cmd.Process.Pid, "pulseaudio"); len(pulse) != 0 {
		t.Fatalf("the daemon started pulseaudio %v though PULSE_SERVER was set:\n%s", pulse, logged)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: `printf %s "$PULSE_SERVER"`}})
	if err != nil || env.Stdout != given {
		t.Fatalf("PULSE_SERVER of a child: %+v, %v; want %s", env, err, given)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := caps.Supports(api.FeatureDesktopAudio); ok || !strings.Contains(why, "no-such-pulse") {
		t.Fatalf("desktop_audio with a sound server that is not there: %v, %q", ok, why)
	}
}

// The daemon's own display (--xvfb) has its own accessibility bus: a
// private session bus, its socket in a 0700 directory, with
// at-spi-bus-launcher on it, which sets AT_SPI_BUS on the display's root
// window. Every process the daemon starts gets the session bus and the
// toolkits' accessibility switches (a request's own env wins), a11y reads
// the bus, and the buses go with the daemon.
func TestXvfbStartsItsAccessibilityBus(t *testing.T) {
	desktoptest.Require(t, "dbus-daemon", "dbus-send", "xprop")
	if err := a11ybus.Available(); err != nil {
		testenv.Missing(t, "%v (the accessibility tests need it)", err)
	}
	bin := buildDaemon(t)
	tok := "xvfb-a11y-token-7e3b"
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token", tok, "--xvfb", "--display", "")
	cmd.Env = append(os.Environ(), "DISPLAY=", "XAUTHORITY=", "DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/given-bus",
		"GTK_MODULES=", "QT_ACCESSIBILITY=", "ACCESSIBILITY_ENABLED=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr, logged := listenAddrOf(t, stderr)
	if !strings.Contains(logged, "started an accessibility bus") {
		t.Fatalf("the daemon started no accessibility bus:\n%s", logged)
	}
	buses := descendantsNamed(cmd.Process.Pid, "dbus-daemon", "at-spi-bus-laun", "at-spi2-registr")
	var names []string
	for _, p := range buses {
		names = append(names, p.name)
	}
	for _, want := range []string{"dbus-daemon", "at-spi-bus-laun"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the daemon's bus processes: %v, want a %s among them", buses, want)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	// A process the daemon starts gets the session bus and the switches.
	env, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{
		Shell: `printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" "$GTK_MODULES" "$QT_ACCESSIBILITY" "$ACCESSIBILITY_ENABLED"`}})
	if err != nil || env.ExitCode != 0 {
		t.Fatalf("the environment of a child: %+v, %v", env, err)
	}
	lines := strings.Split(strings.TrimSuffix(env.Stdout, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "unix:path=/") || lines[1] != "gail:atk-bridge" || lines[2] != "1" || lines[3] != "1" {
		t.Fatalf("DBUS_SESSION_BUS_ADDRESS, GTK_MODULES, QT_ACCESSIBILITY, ACCESSIBILITY_ENABLED of a child: %q", lines)
	}
	socket := strings.TrimPrefix(lines[0], "unix:path=")
	for _, dir := range []string{filepath.Dir(socket), filepath.Dir(filepath.Dir(socket))} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("the session bus's directory %s: %v %v, want mode 0700", dir, fi, err)
		}
	}
	// A request's own env wins.
	own, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: `printf %s "$GTK_MODULES,$QT_ACCESSIBILITY"`,
		Env: map[string]string{"GTK_MODULES": "mine", "QT_ACCESSIBILITY": "0"}}})
	if err != nil || own.Stdout != "mine,0" {
		t.Fatalf("a child's own GTK_MODULES, QT_ACCESSIBILITY: %+v, %v", own, err)
	}
	// The session bus answers the accessibility bus, through a child.
	reply, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: `dbus-send --bus="$DBUS_SESSION_BUS_ADDRESS" --print-reply --dest=org.a11y.Bus /org/a11y/bus org.a11y.Bus.GetAddress`}})
	if err != nil || reply.ExitCode != 0 || !strings.Contains(reply.Stdout, `string "unix:`) {
		t.Fatalf("org.a11y.Bus.GetAddress through a child: %+v, %v", reply, err)
	}
	// The accessibility bus's registry answers a child (and starts).
	_, rest, _ := strings.Cut(reply.Stdout, `string "`)
	a11yAddr, _, _ := strings.Cut(rest, `"`)
	reg, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"dbus-send", "--bus=" + a11yAddr, "--print-reply",
		"--dest=org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root", "org.freedesktop.DBus.Properties.Get",
		"string:org.a11y.atspi.Accessible", "string:ChildCount"}}})
	if err != nil || reg.ExitCode != 0 || !strings.Contains(reg.Stdout, "int32") {
		t.Fatalf("the registry's ChildCount on %q through a child: %+v, %v", a11yAddr, reg, err)
	}
	// The launcher set AT_SPI_BUS on the display's root window.
	prop, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"xprop", "-root", "AT_SPI_BUS"}}})
	if err != nil || prop.ExitCode != 0 || !strings.Contains(prop.Stdout, `"unix:`) {
		t.Fatalf("AT_SPI_BUS on the root window: %+v, %v", prop, err)
	}
	// a11y reads it.
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := caps.Supports(api.FeatureA11y); !ok {
		t.Errorf("a11y unsupported under --xvfb: %s", why)
	}

	// What the buses started since (the registry) goes with them too.
	registry := false
	for _, p := range descendantsNamed(cmd.Process.Pid, "dbus-daemon", "at-spi-bus-laun", "at-spi2-registr") {
		registry = registry || p.name == "at-spi2-registr"
		if !slices.Contains(buses, p) {
			buses = append(buses, p)
		}
	}
	if !registry {
		t.Errorf("no at-spi2-registryd among the daemon's bus processes: %v", buses)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range buses {
		for alive(p.pid, p.name) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(p.pid, p.name) {
			t.Errorf("the daemon's %s (pid %d) outlived it", p.name, p.pid)
		}
	}
	if _, err := os.Stat(filepath.Dir(socket)); !os.IsNotExist(err) {
		t.Errorf("the session bus's directory %s outlived the daemon: %v", filepath.Dir(socket), err)
	}
}

// Without dbus-daemon the daemon runs on under --xvfb, without an
// accessibility bus: it says why, a11y is unsupported, and its children
// get no session bus of its.
func TestXvfbRunsOnWithoutAnAccessibilityBus(t *testing.T) {
	desktoptest.Require(t)
	// A PATH with the display's programs and not dbus-daemon.
	path := t.TempDir()
	for _, tool := range []string{"Xvfb", "openbox", "sh"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(path, tool)); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildDaemon(t)
	tok := "xvfb-no-a11y-token-20c4"
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token", tok, "--xvfb", "--display", "")
	cmd.Env = append(os.Environ(), "DISPLAY=", "XAUTHORITY=", "PULSE_SERVER=", "DBUS_SESSION_BUS_ADDRESS=", "PATH="+path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr, logged := listenAddrOf(t, stderr)
	if !strings.Contains(logged, "no accessibility bus: dbus-daemon is not installed") {
		t.Fatalf("the daemon did not say why it has no accessibility bus:\n%s", logged)
	}
	if buses := descendantsNamed(cmd.Process.Pid, "dbus-daemon", "at-spi-bus-laun"); len(buses) != 0 {
		t.Fatalf("bus processes without dbus-daemon on PATH: %v", buses)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: `printf %s "$DBUS_SESSION_BUS_ADDRESS$GTK_MODULES"`}})
	if err != nil || env.ExitCode != 0 || env.Stdout != "" {
		t.Fatalf("a child's DBUS_SESSION_BUS_ADDRESS, GTK_MODULES without the bus: %+v, %v", env, err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := caps.Supports(api.FeatureA11y); ok || why == "" {
		t.Errorf("a11y without an accessibility bus: %v, %q", ok, why)
	}
}

type namedProc struct {
	pid  int
	name string
}

// descendantsNamed lists the descendants of pid whose command is one of
// names (Linux's /proc; a command is cut to 15 bytes there), with those
// in the process group of a descendant (a daemon that forked twice).
func descendantsNamed(pid int, names ...string) []namedProc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent, pgrp := map[int]int{}, map[int]int{}
	comm := map[int]string{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) < 3 {
			continue
		}
		pp, _ := strconv.Atoi(fields[1])
		pg, _ := strconv.Atoi(fields[2])
		parent[p], pgrp[p], comm[p] = pp, pg, string(stat[open+1:end])
	}
	descends := func(p int) bool {
		for a := parent[p]; a > 1; a = parent[a] {
			if a == pid {
				return true
			}
		}
		return false
	}
	var out []namedProc
	for p, name := range comm {
		if slices.Contains(names, name) && (descends(p) || (pgrp[p] != p && descends(pgrp[p]))) {
			out = append(out, namedProc{p, name})
		}
	}
	return out
}
