package cli_test

import (
	"image/png"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// Without a display the desktop commands name the missing feature and the
// Space's own limitation, and write nothing.
func TestDesktopCommandsWithoutDisplay(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	out := filepath.Join(t.TempDir(), "shot.png")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"view", []string{"view", "dev"}, "desktop_stream"},
		{"screenshot", []string{"screenshot", "dev", "-o", out}, "screenshot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t.Context(), s.home, "", tt.args...)
			if r.code != 1 || !strings.Contains(r.stderr, "capability_missing") || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("%+v", r)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a failed screenshot wrote its file")
	}
}

func TestScreenshotOnXvfb(t *testing.T) {
	needTool(t, "Xvfb")
	v, err := desktop.StartVirtual(t.Context(), desktop.VirtualOptions{Size: "640x480", NoWindowManager: true})
	if err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	t.Cleanup(v.Close)
	s := startSpace(t, spacesdtest.Options{Display: v.Display()})
	out := filepath.Join(t.TempDir(), "shot.png")

	r := run(t.Context(), s.home, "", "screenshot", "dev", "-o", out)
	if r.code != 0 || !strings.Contains(r.stdout, "640x480") {
		t.Fatalf("screenshot: %+v", r)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 640 || cfg.Height != 480 {
		t.Fatalf("not a 640x480 PNG: %+v %v", cfg, err)
	}

	// Never over an existing file without --force; scaled on request.
	if r := run(t.Context(), s.home, "", "screenshot", "dev", "-o", out); r.code == 0 || !strings.Contains(r.stderr, "exists") {
		t.Fatalf("overwrote without --force: %+v", r)
	}
	if r := run(t.Context(), s.home, "", "screenshot", "dev", "-o", out, "--force", "--max-dimension", "320"); r.code != 0 || !strings.Contains(r.stdout, "320x240") {
		t.Fatalf("screenshot --force --max-dimension: %+v", r)
	}
}

// TestViewPrintsViewerURL: on a Space that streams, view prints the
// viewer URL with a fresh ticket in its fragment, which opens the stream.
func TestViewPrintsViewerURL(t *testing.T) {
	s := streamingSpace(t)
	r := run(t.Context(), s.home, "", "view", "dev", "--view-only")
	if r.code != 0 || !strings.Contains(r.stderr, "640x480") || !strings.Contains(r.stderr, "view only") {
		t.Fatalf("view: %+v", r)
	}
	page, fragment, ok := strings.Cut(strings.TrimSpace(r.stdout), "#")
	q, _ := url.ParseQuery(fragment)
	if !ok || !strings.HasSuffix(page, api.PathViewer) || !strings.HasPrefix(q.Get("ticket"), "cuat1.") {
		t.Fatalf("viewer URL %q", r.stdout)
	}
	rc := rtctest.New(t, rtctest.Options{})
	res, err := rtctest.Post(t.Context(), q.Get("offer"), q.Get("ticket"), rc.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer with the printed ticket: %+v, %v", res, err)
	}
	// A smaller stream: its size is printed, and its offer URL asks for it.
	if r := run(t.Context(), s.home, "", "view", "dev", "--max-width", "320"); r.code != 0 || !strings.Contains(r.stderr, "320x240") ||
		!strings.Contains(r.stdout, url.QueryEscape("?max_width=320")) {
		t.Fatalf("view --max-width 320: %+v", r)
	}
	if r := run(t.Context(), s.home, "", "view", "dev", "--max-height", "8"); r.code == 0 || !strings.Contains(r.stderr, "max_height") {
		t.Fatalf("view --max-height 8: %+v", r)
	}
}

// streamingSpace registers a Space that streams a 640x480 display.
func streamingSpace(t *testing.T) *space {
	t.Helper()
	vp8test.Require(t)
	needTool(t, "Xvfb")
	v, err := desktop.StartVirtual(t.Context(), desktop.VirtualOptions{Size: "640x480", NoWindowManager: true})
	if err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	t.Cleanup(v.Close)
	return startSpace(t, spacesdtest.Options{Display: v.Display()})
}

// TestViewOpenRunsTheBrowser: view --open hands the printed URL to the
// first installed command of $BROWSER (a colon-separated list, %s
// standing for the URL); one that fails makes view fail with what it
// said, the URL still printed for the person to open. The openers here
// are scripts that record their arguments: test/browser opens the link in
// a real Chromium.
func TestViewOpenRunsTheBrowser(t *testing.T) {
	s := streamingSpace(t)
	dir := t.TempDir()
	got := filepath.Join(dir, "args")
	opener := filepath.Join(dir, "opener")
	failing := filepath.Join(dir, "failing")
	if err := os.WriteFile(opener, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+got+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	view := func(browser string) result {
		var out, errb testenv.SyncBuffer
		env := cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Home: s.home, Getenv: func(k string) string {
			if k == "BROWSER" {
				return browser
			}
			return os.Getenv(k)
		}}
		code := cli.Run(t.Context(), env, "view", []string{"dev", "--open"})
		return result{code, out.String(), errb.String()}
	}

	r := view(filepath.Join(dir, "no-such-browser") + ":" + opener + " --new-window %s")
	if r.code != 0 || !strings.Contains(r.stderr, "opened with "+opener) {
		t.Fatalf("view --open: %+v", r)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if want := "--new-window\n" + strings.TrimSpace(r.stdout) + "\n"; string(b) != want || !strings.Contains(r.stdout, api.PathViewer+"#") {
		t.Fatalf("the opener got %q, want %q", b, want)
	}

	r = view(failing)
	if r.code != 1 || !strings.Contains(r.stderr, "host_capability_missing") || !strings.Contains(r.stderr, "cannot open display") ||
		!strings.Contains(r.stdout, api.PathViewer+"#") {
		t.Fatalf("view --open with a failing opener: %+v", r)
	}
}
