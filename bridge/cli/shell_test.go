//go:build linux

package cli_test

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// The shell runs on a real PTY on this side too: the test types into the
// master end, the CLI reads the tty end in raw mode as a person's terminal.
func TestShellInteractive(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	defer master.Close()
	defer tty.Close()
	// Never tty.Fd(): it makes the file blocking, and the CLI could no
	// longer stop its reader with a deadline.
	getTermios := func() (*unix.Termios, error) {
		rc, err := tty.SyscallConn()
		if err != nil {
			return nil, err
		}
		var st *unix.Termios
		var ierr error
		if err := rc.Control(func(fd uintptr) { st, ierr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil {
			return nil, err
		}
		return st, ierr
	}
	// pty.Setsize calls Fd() too; set the size through the raw conn.
	setSize := func(rows, cols uint16) {
		t.Helper()
		rc, err := tty.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var ierr error
		if err := rc.Control(func(fd uintptr) {
			ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
		}); err != nil || ierr != nil {
			t.Fatalf("set size: %v %v", err, ierr)
		}
	}
	setSize(30, 100)
	before, err := getTermios()
	if err != nil {
		t.Fatal(err)
	}

	var screen testenv.SyncBuffer
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(&screen, master)
	}()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, cli.Env{Stdin: tty, Stdout: tty, Stderr: tty, Home: s.home}, "shell", []string{"dev", "--", "/bin/sh"})
	}()
	typeLine := func(line string) {
		t.Helper()
		if _, err := master.Write([]byte(line + "\r")); err != nil {
			t.Fatal(err)
		}
	}

	// Raw mode: the local terminal no longer echoes or edits lines.
	eventually(t, "raw mode", func() bool {
		st, err := getTermios()
		return err == nil && st.Lflag&(unix.ECHO|unix.ICANON) == 0
	})
	// The Space's PTY has the local size at start.
	typeLine("stty size; echo $((6*7))")
	eventually(t, "the remote size and a computed answer", func() bool {
		return strings.Contains(screen.String(), "30 100") && strings.Contains(screen.String(), "42")
	})
	// A resize (the kernel sends SIGWINCH to the terminal's foreground
	// group; this test process is not in it, so it signals itself).
	setSize(50, 132)
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the resize to reach the Space", func() bool {
		typeLine("stty size")
		return strings.Contains(screen.String(), "50 132")
	})
	typeLine("exit 5")
	if code := <-done; code != 5 {
		t.Fatalf("exit code %d, want 5; screen:\n%s", code, screen.String())
	}
	after, err := getTermios()
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Fatalf("terminal not restored: lflag %#x -> %#x", before.Lflag, after.Lflag)
	}
	master.Close()
	tty.Close()
	<-readDone
}

func TestShellNeedsATerminal(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	r := run(t.Context(), s.home, "", "shell", "dev")
	if r.code != cli.ExitBridge || !strings.Contains(r.stderr, "needs a terminal") {
		t.Fatalf("%+v", r)
	}
}
