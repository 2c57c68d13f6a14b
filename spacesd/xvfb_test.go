package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
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
