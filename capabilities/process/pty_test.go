package process_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/api"
)

func requirePTY(t *testing.T) {
	t.Helper()
	p, tty, err := pty.Open()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no PTY: %v", err)
		}
		t.Skipf("no PTY: %v", err)
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
