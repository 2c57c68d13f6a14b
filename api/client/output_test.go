package client_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// longWait is a wait a test expects to be cut short by output or an exit.
const longWait = time.Minute

func start(t *testing.T, c *client.Client, shell string) *api.ProcessInfo {
	t.Helper()
	return startWith(t, c, api.StartRequest{Command: api.Command{Shell: shell}})
}

func startWith(t *testing.T, c *client.Client, req api.StartRequest) *api.ProcessInfo {
	t.Helper()
	info, err := c.Start(t.Context(), req)
	if err != nil {
		t.Fatalf("start %+v: %v", req, err)
	}
	t.Cleanup(func() { _ = c.Signal(t.Context(), info.ID, "KILL") })
	return info
}

// readAll reads with ReadOutput from the start until the exit, each read
// from the offsets the last one answered.
func readAll(t *testing.T, c *client.Client, id string, req client.OutputRequest) (stdout, stderr string, reads int, last *client.Output) {
	t.Helper()
	var out, errb bytes.Buffer
	for {
		o, err := c.ReadOutput(t.Context(), id, req)
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		reads++
		if o.StdoutOffset != req.StdoutOffset+int64(len(o.Stdout))+o.StdoutLost ||
			o.StderrOffset != req.StderrOffset+int64(len(o.Stderr))+o.StderrLost {
			t.Fatalf("read %d from (%d, %d) answered %d+%d and %d+%d bytes but offsets (%d, %d)", reads,
				req.StdoutOffset, req.StderrOffset, len(o.Stdout), o.StdoutLost, len(o.Stderr), o.StderrLost, o.StdoutOffset, o.StderrOffset)
		}
		out.Write(o.Stdout)
		errb.Write(o.Stderr)
		req.StdoutOffset, req.StderrOffset = o.StdoutOffset, o.StderrOffset
		if o.Process.State == api.StateExited && !o.More &&
			o.StdoutOffset == o.Process.StdoutBytes && o.StderrOffset == o.Process.StderrBytes {
			return out.String(), errb.String(), reads, o
		}
	}
}

// A process printing numbered lines while it is read, bit by bit, from the
// offsets each read answers: every line arrives once, in order.
func TestReadOutputLosesAndRepeatsNothing(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	const lines = 200
	for _, tc := range []struct {
		name string
		req  client.OutputRequest
	}{
		{"waiting", client.OutputRequest{Wait: longWait}},
		{"small reads", client.OutputRequest{Wait: longWait, MaxBytes: 7}},
		{"no wait", client.OutputRequest{MaxBytes: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := start(t, d.Client, fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line $i"; echo "err $i" >&2; i=$((i+1)); sleep 0.002; done`, lines))
			stdout, stderr, reads, last := readAll(t, d.Client, info.ID, tc.req)
			var wantOut, wantErr strings.Builder
			for i := range lines {
				fmt.Fprintf(&wantOut, "line %d\n", i)
				fmt.Fprintf(&wantErr, "err %d\n", i)
			}
			if stdout != wantOut.String() || stderr != wantErr.String() {
				t.Fatalf("after %d reads:\nstdout %q\nstderr %q", reads, stdout, stderr)
			}
			if last.Process.ExitCode == nil || *last.Process.ExitCode != 0 {
				t.Fatalf("exit not reported: %+v", last.Process)
			}
		})
	}
}

func TestReadOutputBounds(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c := d.Client
	ctx := t.Context()
	info := start(t, c, `printf 0123456789; printf abc >&2`)
	// Read to the end first, so that everything is there to read again.
	if stdout, stderr, _, _ := readAll(t, c, info.ID, client.OutputRequest{Wait: longWait}); stdout != "0123456789" || stderr != "abc" {
		t.Fatalf("read %q and %q", stdout, stderr)
	}

	// MaxBytes counts both streams together, and says More.
	o, err := c.ReadOutput(ctx, info.ID, client.OutputRequest{MaxBytes: 11})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Stdout)+len(o.Stderr) != 11 || !o.More {
		t.Fatalf("max 11 read %q + %q, more %v", o.Stdout, o.Stderr, o.More)
	}
	// From the end of an exited process: nothing, at once, with its exit.
	o, err = c.ReadOutput(ctx, info.ID, client.OutputRequest{StdoutOffset: 10, StderrOffset: 3, Wait: longWait})
	if err != nil || len(o.Stdout)+len(o.Stderr) != 0 || o.More || o.Process.ExitCode == nil {
		t.Fatalf("read at the end: %+v, %v", o, err)
	}

	for _, tc := range []struct {
		id   string
		req  client.OutputRequest
		want api.Kind
	}{
		{info.ID, client.OutputRequest{StdoutOffset: 11}, api.KindInvalidArgument},
		{info.ID, client.OutputRequest{StderrOffset: -1}, api.KindInvalidArgument},
		{info.ID, client.OutputRequest{MaxBytes: -1}, api.KindInvalidArgument},
		{"no-such-process", client.OutputRequest{}, api.KindNotFound},
	} {
		if _, err := c.ReadOutput(ctx, tc.id, tc.req); api.KindOf(err) != tc.want {
			t.Errorf("ReadOutput(%s, %+v): %v, want %s", tc.id, tc.req, err, tc.want)
		}
	}
}

// A wait with nothing to read ends when the wait does, with nothing and no
// error; a wait ends at the first output, and at the exit.
func TestReadOutputWaits(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c := d.Client
	ctx := t.Context()
	p := startWith(t, c, api.StartRequest{Command: api.Command{Shell: `read line; echo "got $line"; read x; exit 7`}, Stdin: true})
	o, err := c.ReadOutput(ctx, p.ID, client.OutputRequest{Wait: 50 * time.Millisecond})
	if err != nil || len(o.Stdout) != 0 || o.StdoutOffset != 0 || o.Process.State != api.StateRunning {
		t.Fatalf("wait on a quiet process: %+v, %v", o, err)
	}

	type answer struct {
		o   *client.Output
		err error
	}
	read := func(req client.OutputRequest) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			o, err := c.ReadOutput(ctx, p.ID, req)
			ch <- answer{o, err}
		}()
		return ch
	}
	// Whether the read waits already or starts after the echo, it answers
	// the line and no more.
	pending := read(client.OutputRequest{Wait: longWait})
	if _, err := c.WriteStdin(ctx, p.ID, []byte("hi\n"), false); err != nil {
		t.Fatal(err)
	}
	a := <-pending
	if a.err != nil || string(a.o.Stdout) != "got hi\n" || a.o.StdoutOffset != 7 {
		t.Fatalf("wait for output: %+v, %v", a.o, a.err)
	}
	// A wait ends at the exit, which it reports.
	pending = read(client.OutputRequest{StdoutOffset: 7, Wait: longWait})
	if _, err := c.WriteStdin(ctx, p.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	a = <-pending
	if a.err != nil || len(a.o.Stdout) != 0 || a.o.Process.ExitCode == nil || *a.o.Process.ExitCode != 7 {
		t.Fatalf("wait for the exit: %+v, %v", a.o, a.err)
	}
}

// Bytes the ring dropped are counted, and the read goes on after them.
func TestReadOutputCountsLostBytes(t *testing.T) {
	const ring = 64
	d := spacesdtest.Start(t, spacesdtest.Options{Process: process.Options{RingBytes: ring}})
	c := d.Client
	info := start(t, c, `i=0; while [ $i -lt 100 ]; do printf '%09d\n' $i; i=$((i+1)); done`)
	// Read only once it is all written, so that the ring has dropped most.
	for p := info; p.State != api.StateExited; {
		time.Sleep(10 * time.Millisecond)
		var err error
		if p, err = c.Process(t.Context(), info.ID); err != nil {
			t.Fatal(err)
		}
	}
	stdout, _, _, last := readAll(t, c, info.ID, client.OutputRequest{})
	if last.StdoutLost != 1000-ring || len(stdout) != ring || !strings.HasSuffix(stdout, "000000099\n") {
		t.Fatalf("read %q, lost %d", stdout, last.StdoutLost)
	}
}
