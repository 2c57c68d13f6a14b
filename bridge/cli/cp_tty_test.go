//go:build linux

package cli_test

import (
	"io"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// With stderr on a terminal, cp draws a progress bar there (and stdout
// still carries only the result line).
func TestCpProgressBarOnTerminal(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	local, remote := t.TempDir(), t.TempDir()
	_, src := randomFile(t, local, "big.bin", 4<<20)
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	var screen testenv.SyncBuffer
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(&screen, master)
	}()
	var out testenv.SyncBuffer
	code := cli.Run(t.Context(), cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: tty, Home: s.home},
		"cp", []string{src, "dev:" + remote + "/"})
	if code != 0 {
		t.Fatalf("cp exit %d", code)
	}
	eventually(t, "the finished bar", func() bool {
		return strings.Contains(screen.String(), "upload big.bin") && strings.Contains(screen.String(), "100%")
	})
	tty.Close()
	master.Close()
	<-readDone
	if strings.Contains(out.String(), "%") || !strings.Contains(out.String(), "verified in Space") {
		t.Fatalf("stdout: %q", out.String())
	}
}
