package process_test

import (
	"bytes"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

// TestStdinStallIsBounded: a write to the stdin of a process that does not
// read ends after the stall bound, saying how much went in, on a pipe and
// on a terminal alike; before, it held the caller until the process exited.
func TestStdinStallIsBounded(t *testing.T) {
	t.Parallel()
	requirePTY(t)
	m := newManager(t, process.Options{StdinStallWait: 300 * time.Millisecond})
	for _, tc := range []struct {
		name string
		req  api.StartRequest
	}{
		{"pipe", api.StartRequest{Command: api.Command{Shell: "echo ready; exec sleep 1000"}, Stdin: true}},
		{"raw terminal", api.StartRequest{Command: api.Command{Shell: "stty raw -echo; echo ready; exec sleep 1000"}, PTY: &api.PTYSize{Cols: 80, Rows: 24}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := m.Start(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Signal(syscall.SIGKILL, true); waitDone(t, p) }()
			waitOutput(t, p, "ready")
			const size = 4 << 20
			n, err := p.WriteStdin(t.Context(), bytes.NewReader(bytes.Repeat([]byte("x"), size)), false)
			e := api.AsError(err)
			if e == nil || e.Kind != api.KindTimeout || !e.Retryable || n <= 0 || n >= size ||
				!strings.Contains(e.Message, strconv.FormatInt(n, 10)+" bytes were written") {
				t.Fatalf("write to a process that does not read: %d, %#v; want a timeout naming the %d bytes accepted", n, e, n)
			}
			select {
			case <-p.Done():
				t.Fatal("the write ended only once the process exited")
			default:
			}
		})
	}
}

// TestTerminalLineLimit: a terminal in line mode keeps at most 4095 bytes
// of a line; the kernel drops the rest without a word. The daemon refuses
// the overflow instead, saying how much went in, and what fits arrives whole.
func TestTerminalLineLimit(t *testing.T) {
	t.Parallel()
	requirePTY(t)
	m := newManager(t, process.Options{})
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "stty -echo; echo ready; exec cat"}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Signal(syscall.SIGKILL, true); waitDone(t, p) }()
	waitOutput(t, p, "ready")
	longest := strings.Repeat("a", 4095)
	if n, err := p.WriteStdin(t.Context(), strings.NewReader(longest+"\n"), false); err != nil || n != 4096 {
		t.Fatalf("the longest line: %d, %v", n, err)
	}
	waitOutput(t, p, longest+"\r\n")
	n, err := p.WriteStdin(t.Context(), strings.NewReader(strings.Repeat("b", 4096)+"\n"), false)
	e := api.AsError(err)
	if e == nil || e.Kind != api.KindInvalidArgument || n != 4095 || !strings.Contains(e.Message, "4095 bytes were written") {
		t.Fatalf("a line one byte too long: %d, %#v; want invalid_argument after 4095 bytes", n, e)
	}
	// The line so far is whole in the terminal: ending it delivers it.
	if _, err := p.WriteStdin(t.Context(), strings.NewReader("\n"), false); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p, strings.Repeat("b", 4095)+"\r\n")
}
