package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
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
