package process_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

// closeRecorder is an attached stream's writer that keeps what it got and
// says when it was closed.
type closeRecorder struct {
	bytes.Buffer
	closed chan struct{}
}

func (c *closeRecorder) Close() error { close(c.closed); return nil }

// An attached stdout is a byte stream with backpressure: a reader that
// takes its time still gets every byte in order, though the process wrote
// many times what its ring would hold (a ring drops the oldest bytes).
// Stderr goes to its own writer; both are closed at the end, and the
// process is listed like any other.
func TestStartAttachedLosesNothing(t *testing.T) {
	t.Parallel()
	const ringBytes = 4 << 10
	const lines = 200_000 // about 1.3 MB of output
	var want bytes.Buffer
	for i := 1; i <= lines; i++ {
		fmt.Fprintln(&want, i)
	}
	m := newManager(t, process.Options{RingBytes: ringBytes})
	outR, outW := io.Pipe()
	errW := &closeRecorder{closed: make(chan struct{})}
	p, err := m.StartAttached(api.StartRequest{
		Command: api.Command{Shell: fmt.Sprintf("seq 1 %d; echo done >&2", lines)},
		Tag:     "attached",
	}, process.Attach{Stdout: outW, Stderr: errW})
	if err != nil {
		t.Fatal(err)
	}
	// A slow reader: small reads with pauses, while the process writes on.
	var got bytes.Buffer
	buf := make([]byte, 512)
	n := 0
	for {
		k, err := outR.Read(buf)
		got.Write(buf[:k])
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n%(64<<10) < 512 {
			time.Sleep(time.Millisecond)
		}
	}
	<-p.Done()
	<-errW.closed
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("read %d bytes of stdout, not the %d the process wrote", got.Len(), want.Len())
	}
	if errW.String() != "done\n" {
		t.Fatalf("stderr %q", errW.String())
	}
	info := p.Info()
	if info.Tag != "attached" || info.StdoutBytes != 0 || *info.ExitCode != 0 {
		t.Fatalf("info %+v: want the tag, an empty ring and exit 0", info)
	}
	if list := m.List(); len(list) != 1 || list[0].ID != p.ID() {
		t.Fatalf("list %+v", list)
	}
}

// A reader that goes away does not hold the process: its writes fail, the
// pump drains the pipe, and the process is reaped.
func TestStartAttachedReaderGone(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	outR, outW := io.Pipe()
	p, err := m.StartAttached(api.StartRequest{Command: api.Command{Shell: "head -c 1048576 /dev/zero"}}, process.Attach{Stdout: outW})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(outR, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	outR.Close()
	waitDone(t, p)
}

func TestStartAttachedRefusesPTY(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	_, outW := io.Pipe()
	_, err := m.StartAttached(api.StartRequest{Command: api.Command{Argv: []string{"true"}}, PTY: &api.PTYSize{Cols: 80, Rows: 24}}, process.Attach{Stdout: outW})
	if api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("attached PTY: %v, want invalid_argument", err)
	}
}
