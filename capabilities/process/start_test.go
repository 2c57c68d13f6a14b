package process_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

func TestStartOutputAndExit(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "echo out; echo err >&2; exit 7"}, Tag: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	out, errb, exit := collect(t, p, 0, 0)
	if string(out) != "out\n" || string(errb) != "err\n" {
		t.Fatalf("stdout %q stderr %q", out, errb)
	}
	if exit == nil || exit.State != api.StateExited || *exit.ExitCode != 7 || exit.Tag != "t1" || exit.StdoutBytes != 4 {
		t.Fatalf("exit %+v", exit)
	}
	// The status is still answered after exit.
	got, err := m.Get(p.ID())
	if err != nil || got.Info().State != api.StateExited {
		t.Fatalf("get after exit: %v", err)
	}
	if list := m.List(); len(list) != 1 || list[0].ID != p.ID() {
		t.Fatalf("list %+v", list)
	}
}

func TestStartStdin(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	p, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"cat"}}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteStdin(t.Context(), strings.NewReader("hello "), false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteStdin(t.Context(), strings.NewReader("world"), true); err != nil {
		t.Fatal(err)
	}
	out, _, exit := collect(t, p, 0, 0)
	if string(out) != "hello world" || *exit.ExitCode != 0 {
		t.Fatalf("out %q exit %+v", out, exit)
	}
	if _, err := p.WriteStdin(t.Context(), strings.NewReader("x"), false); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("write after close: %v", err)
	}
	q, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.WriteStdin(t.Context(), strings.NewReader("x"), false); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("stdin of a process started without it: %v", err)
	}
	waitDone(t, q)
}

func TestStartSignals(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	for _, name := range []string{"TERM", "SIGKILL", "int", "HUP", "QUIT", "USR1", "USR2"} {
		t.Run(name, func(t *testing.T) {
			p, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"sleep", "100"}}})
			if err != nil {
				t.Fatal(err)
			}
			sig, err := process.ParseSignal(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Signal(sig, true); err != nil {
				t.Fatal(err)
			}
			info := waitDone(t, p)
			if info.Signal != process.SignalName(sig) || *info.ExitCode != 128+int(sig) {
				t.Fatalf("info %+v", info)
			}
			if err := p.Signal(sig, true); api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("signal after exit: %v", err)
			}
		})
	}
	t.Run("STOP and CONT", func(t *testing.T) {
		p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "read x; echo got $x"}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Signal(syscall.SIGSTOP, true); err != nil {
			t.Fatal(err)
		}
		if err := p.Signal(syscall.SIGCONT, false); err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteStdin(t.Context(), strings.NewReader("go\n"), true); err != nil {
			t.Fatal(err)
		}
		out, _, _ := collect(t, p, 0, 0)
		if string(out) != "got go\n" {
			t.Fatalf("out %q", out)
		}
	})
}

func TestRetention(t *testing.T) {
	t.Parallel()
	clock := &heldClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := newManager(t, process.Options{Clock: clock, ExitRetention: 10 * time.Minute})
	p, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"echo", "kept"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	clock.Add(10*time.Minute - time.Second)
	if n := m.Reap(); n != 0 {
		t.Fatalf("reaped %d before the retention ran out", n)
	}
	if _, err := m.Get(p.ID()); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	if n := m.Reap(); n != 1 {
		t.Fatalf("reaped %d, want 1", n)
	}
	if _, err := m.Get(p.ID()); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("get after retention: %v", err)
	}
}

func TestMaxProcesses(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{MaxProcesses: 2})
	var ps []*process.Process
	for range 2 {
		p, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"sleep", "100"}}})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if _, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"true"}}}); api.KindOf(err) != api.KindLimitExceeded {
		t.Fatalf("third start: %v", err)
	}
	if _, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}}); api.KindOf(err) != api.KindLimitExceeded {
		t.Fatalf("exec at the limit: %v", err)
	}
	for _, p := range ps {
		_ = p.Signal(syscall.SIGKILL, true)
		waitDone(t, p)
	}
	if _, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}}); err != nil {
		t.Fatalf("exec after exits: %v", err)
	}
	p, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"true"}}})
	if err != nil {
		t.Fatalf("start after exits: %v", err)
	}
	waitDone(t, p)
}

// pattern is a known sequence: line i is "<i>:" padded with a letter.
func pattern(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%08d:%s\n", i, strings.Repeat(string(rune('a'+i%26)), 55))
	}
	return b.Bytes()[:n]
}

// A reader that stops mid-output and resumes from its last offsets gets
// every byte exactly once.
func TestResumeFromOffsetLosesNothing(t *testing.T) {
	t.Parallel()
	const total = 4 << 20 // more than the ring: the reader must keep up, not the ring hold all
	m := newManager(t, process.Options{RingBytes: 8 << 20})
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: fmt.Sprintf("i=0; while [ $i -lt %d ]; do printf '%%08d:%%s\\n' $i %s; i=$((i+1)); done", total/64, strings.Repeat("a", 55))}})
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var outOff, errOff int64
	for round := 0; ; round++ {
		s, err := p.Subscribe(outOff, errOff)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		exited := false
		for i := 0; i < 5 && !exited; i++ { // a few events, then "disconnect"
			ev, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Type {
			case "output":
				got = append(got, ev.Data...)
			case "gap":
				t.Fatalf("gap %+v", ev)
			case "exit":
				exited = true
			}
		}
		cancel()
		outOff, errOff = s.Offsets()
		if exited {
			break
		}
	}
	want := make([]byte, 0, total)
	for i := 0; i < total/64; i++ {
		want = fmt.Appendf(want, "%08d:%s\n", i, strings.Repeat("a", 55))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

func TestGapIsReported(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{RingBytes: 1024})
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "head -c 5000 /dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	s, err := p.Subscribe(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.Next(t.Context())
	if err != nil || ev.Type != "gap" || ev.Offset != 5000-1024 || ev.Lost != 5000-1024 {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	if _, err := p.Subscribe(5001, 0); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("offset past the end: %v", err)
	}
}

func TestManyConcurrentProcessesLoseNothing(t *testing.T) {
	t.Parallel()
	const n, size = 200, 64 << 10
	m := newManager(t, process.Options{MaxProcesses: n})
	want := pattern(size)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"head", "-c", fmt.Sprint(size), "/dev/stdin"}}, Stdin: true})
			if err != nil {
				errs <- err
				return
			}
			// stdin carries the pattern, stdout echoes it, stderr stays empty.
			if _, err := p.WriteStdin(context.Background(), bytes.NewReader(want), true); err != nil {
				errs <- fmt.Errorf("process %d stdin: %w", i, err)
				return
			}
			out, errb, exit := collect(t, p, 0, 0)
			if !bytes.Equal(out, want) || len(errb) != 0 || *exit.ExitCode != 0 {
				errs <- fmt.Errorf("process %d: %d bytes, first difference at %d, stderr %q", i, len(out), firstDiff(out, want), errb)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Exited processes keep their output within a budget: a client that starts
// many chatty processes cannot make the daemon hold each one's rings for the
// whole retention. The oldest exited processes give up their output first
// (a reader learns of it as a gap); their status stays.
func TestRetainedOutputIsBounded(t *testing.T) {
	t.Parallel()
	const ring, budget = 16 << 10, 40 << 10
	m := newManager(t, process.Options{RingBytes: ring, RetainedOutputBytes: budget})
	var ps []*process.Process
	for range 5 {
		p, err := m.Start(api.StartRequest{Command: api.Command{Shell: fmt.Sprintf("head -c %d /dev/zero", ring)}})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, p)
		ps = append(ps, p)
	}
	held := 0
	for i, p := range ps {
		s, err := p.Subscribe(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := s.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "output":
			held += ring
		case "gap":
			if ev.Lost != ring || ev.Offset != ring {
				t.Fatalf("process %d: gap %+v", i, ev)
			}
		default:
			t.Fatalf("process %d: first event %+v", i, ev)
		}
		if info := p.Info(); info.State != api.StateExited || info.StdoutBytes != ring {
			t.Fatalf("process %d: info %+v", i, info)
		}
	}
	if held > budget {
		t.Fatalf("exited processes hold %d bytes of output, over the budget of %d", held, budget)
	}
	// The newest keeps its output.
	if out, _, _ := collect(t, ps[len(ps)-1], 0, 0); len(out) != ring {
		t.Fatalf("newest process kept %d bytes", len(out))
	}
}

// TestStartSignalsWhenStartedIgnoring: a daemon started under nohup, or as
// a shell's background job, ignores SIGHUP (SIGINT, SIGQUIT); its
// processes still get every signal at its default: TestStartSignals
// passes in a test binary started so.
func TestStartSignalsWhenStartedIgnoring(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", `trap "" HUP INT QUIT; exec "$0" -test.run='^TestStartSignals$' -test.count=1`, os.Args[0])
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("TestStartSignals in a binary started ignoring HUP, INT and QUIT: %v\n%s", err, out)
	}
}
