package browser_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// TestViewOpensTheLinkInABrowser: cua-bridge view --open runs the
// browser $BROWSER names, a real Chromium (headless, on loopback as every
// test's), which loads the page from the link and connects: the daemon
// sends its frames.
func TestViewOpensTheLinkInABrowser(t *testing.T) {
	bin := chromiumPath(t)
	e := startSpace(t, "640x480")
	home := t.TempDir()
	reg, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Add(t.Context(), "dev", e.d.URL, e.d.Token); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	var flags []string
	for _, f := range chromiumFlags {
		flags = append(flags, "'"+f+"'")
	}
	opener := filepath.Join(dir, "browser")
	script := "#!/bin/sh\necho $$ > " + pidFile + "\nexec " + bin + " --user-data-dir=" + filepath.Join(dir, "profile") + " " + strings.Join(flags, " ") + " \"$1\" 2>/dev/null\n"
	if err := os.WriteFile(opener, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The browser runs on after view (in a session of its own, whose
		// id is the script's pid): this test started it, and ends it.
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})

	var out strings.Builder
	errb := &testenv.SyncBuffer{}
	env := cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: errb, Home: home,
		Getenv: func(k string) string {
			if k == "BROWSER" {
				return opener
			}
			return os.Getenv(k)
		}}
	if code := cli.Run(t.Context(), env, "view", []string{"dev", "--open"}); code != 0 {
		t.Fatalf("view --open: exit %d: %s", code, errb.String())
	}
	desktoptest.EventuallyWithin(t, "the browser's page watching the stream", pageTimeout, func() bool {
		m := spacesdtest.Metrics(t, e.d.URL, e.d.Token)
		return m[streamsvc.MetricViewers] == 1 && m[streamsvc.MetricFrames] > 0
	})
}
