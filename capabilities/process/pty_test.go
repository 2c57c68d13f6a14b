package process_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

func requirePTY(t *testing.T) {
	t.Helper()
	p, tty, err := pty.Open()
	if err != nil {
		testenv.Missing(t, "no PTY: %v", err)
	}
	_ = p.Close()
	_ = tty.Close()
}

// waitOutput reads the process's stdout until it holds want.
func waitOutput(t *testing.T, p *process.Process, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := p.Subscribe(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for !bytes.Contains(got, []byte(want)) {
		ev, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %q, got %q: %v", want, got, err)
		}
		got = append(got, ev.Data...)
	}
}

func TestPTYEchoAndResize(t *testing.T) {
	t.Parallel()
	requirePTY(t)
	m := newManager(t, process.Options{})
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "stty size; while read l; do [ \"$l\" = size ] && stty size; [ \"$l\" = quit ] && exit 0; done",
		Env: map[string]string{"PS1": ""}}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Info().PTY {
		t.Fatal("info does not say pty")
	}
	waitOutput(t, p, "24 80")
	// The terminal echoes what is typed.
	if _, err := p.WriteStdin(t.Context(), strings.NewReader("hello-echo\n"), false); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p, "hello-echo")
	if err := p.Resize(api.PTYSize{Cols: 132, Rows: 50}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteStdin(t.Context(), strings.NewReader("size\n"), false); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p, "50 132")
	if _, err := p.WriteStdin(t.Context(), strings.NewReader("quit\n"), false); err != nil {
		t.Fatal(err)
	}
	if info := waitDone(t, p); *info.ExitCode != 0 || info.StderrBytes != 0 {
		t.Fatalf("info %+v", info)
	}
	if err := p.Resize(api.PTYSize{Cols: 1, Rows: 1}); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("resize after exit: %v", err)
	}
}

// holdUntilStopped returns a shell snippet that keeps running (and holding
// the terminal) while a marker file exists, and a function telling whether
// it was let go. The marker goes after a minute (and with the test), so a
// hung test still ends it without signalling a pid it may not own any more.
func holdUntilStopped(t *testing.T) (string, func() bool) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "hold")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fallback := time.AfterFunc(time.Minute, func() { _ = os.Remove(marker) })
	t.Cleanup(func() { fallback.Stop(); _ = os.Remove(marker) })
	stopped := func() bool { _, err := os.Stat(marker); return err != nil }
	return fmt.Sprintf("while [ -e %s ]; do sleep 0.05; done", marker), stopped
}

// A background child that ignores SIGHUP keeps the terminal open after the
// shell exits: the process must still count as exited after DrainGrace.
func TestPTYExitWhileBackgroundChildHoldsTerminal(t *testing.T) {
	t.Parallel()
	requirePTY(t)
	m := newManager(t, process.Options{})
	hold, stopped := holdUntilStopped(t)
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "trap '' HUP; (" + hold + ") & echo started"},
		PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	info := waitDone(t, p)
	if stopped() {
		t.Fatal("the process counted as exited only once its background child let go of the terminal")
	}
	if *info.ExitCode != 0 {
		t.Fatalf("info %+v", info)
	}
	waitOutput(t, p, "started")
}

// Typing into a terminal whose program does not read (raw mode, input
// queue full) must end when the caller's context does, and leave stdin
// usable for the next writer.
func TestPTYStdinWriteIsCancelled(t *testing.T) {
	t.Parallel()
	requirePTY(t)
	m := newManager(t, process.Options{})
	hold, stopped := holdUntilStopped(t)
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "stty raw -echo; echo ready; " + hold},
		PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p, "ready")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	wrote := make(chan error, 1)
	go func() {
		_, err := p.WriteStdin(ctx, bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)), false)
		wrote <- err
	}()
	select {
	case err = <-wrote:
	case <-time.After(time.Minute): // a write stuck past its context's end
		t.Fatal("the write did not end with its context")
	}
	if stopped() {
		t.Fatal("the write ended only once the program exited")
	}
	if api.KindOf(err) != api.KindCancelled {
		t.Fatalf("write to a terminal nobody reads: %v, want kind cancelled", err)
	}
	if err := p.Resize(api.PTYSize{Cols: 100, Rows: 30}); err != nil {
		t.Fatalf("resize after a cancelled write: %v", err)
	}
	if err := p.Signal(syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
}
