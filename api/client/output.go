package client

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// OutputRequest says what ReadOutput reads.
type OutputRequest struct {
	// StdoutOffset and StderrOffset are where to start: 0 for the
	// beginning, else the offsets a previous read answered.
	StdoutOffset, StderrOffset int64
	// MaxBytes bounds the bytes answered, stdout and stderr together; 0 =
	// no bound beyond the daemon's ring.
	MaxBytes int64
	// Wait, when nothing new is there, waits that long for the first new
	// byte or the process's end; 0 answers at once.
	Wait time.Duration
}

// Output is one read of a process's output.
type Output struct {
	Stdout, Stderr []byte
	// StdoutOffset and StderrOffset are the offsets of the next bytes:
	// the next read starts there and so repeats and skips nothing.
	StdoutOffset, StderrOffset int64
	// StdoutLost and StderrLost count the bytes the daemon's ring dropped
	// before this read reached them (a "gap" of the stream).
	StdoutLost, StderrLost int64
	// More says MaxBytes ended the read before the output that was there
	// when it started.
	More bool
	// Process is the process as the read found it: with its exit status
	// when it ended before or during the read.
	Process api.ProcessInfo
}

// ReadOutput reads what a detached process wrote from the given offsets:
// everything there when it starts (up to MaxBytes); when that is nothing,
// it waits up to Wait for the first new output or the end. It is a
// bounded read over StreamProcess, so repeated reads, each from the offsets
// the last one answered, see every byte once, in order.
func (c *Client) ReadOutput(ctx context.Context, id string, req OutputRequest) (*Output, error) {
	if req.MaxBytes < 0 || req.Wait < 0 {
		return nil, api.Errorf(api.KindInvalidArgument, "read output of process %s: max bytes %d and wait %s cannot be negative", id, req.MaxBytes, req.Wait)
	}
	info, err := c.Process(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, o := range []struct {
		stream    api.Stream
		off, have int64
	}{{api.StreamStdout, req.StdoutOffset, info.StdoutBytes}, {api.StreamStderr, req.StderrOffset, info.StderrBytes}} {
		if o.off < 0 || o.off > o.have {
			return nil, api.Errorf(api.KindInvalidArgument,
				"%s offset %d is outside 0..%d (the bytes process %s has written so far)", o.stream, o.off, o.have, id)
		}
	}
	out := &Output{StdoutOffset: req.StdoutOffset, StderrOffset: req.StderrOffset, Process: *info}
	// What was there when the read started: reached, the read may end.
	caughtUp := func() bool { return out.StdoutOffset >= info.StdoutBytes && out.StderrOffset >= info.StderrBytes }
	if caughtUp() && (req.Wait == 0 || info.State == api.StateExited) {
		return out, nil
	}
	s, err := c.StreamProcess(ctx, id, req.StdoutOffset, req.StderrOffset)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	// Next cannot be given a deadline: closing the stream ends it.
	var waited atomic.Bool
	if req.Wait > 0 {
		t := time.AfterFunc(req.Wait, func() { waited.Store(true); s.Close() })
		defer t.Stop()
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()

	var total int64
	changed := false
	for {
		if caughtUp() && (changed || req.Wait == 0) {
			return out, nil
		}
		if req.MaxBytes > 0 && total >= req.MaxBytes {
			out.More = !caughtUp()
			return out, nil
		}
		ev, err := s.Next()
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, transportError(ctx, ctx.Err())
		case err != nil && waited.Load():
			// The wait is over: answer what came (perhaps nothing).
			return out, nil
		case err != nil:
			return nil, err
		}
		switch ev.Type {
		case "output":
			data := ev.Data
			if req.MaxBytes > 0 && int64(len(data)) > req.MaxBytes-total {
				data = data[:req.MaxBytes-total]
			}
			buf, next := &out.Stdout, &out.StdoutOffset
			if ev.Stream == api.StreamStderr {
				buf, next = &out.Stderr, &out.StderrOffset
			}
			*buf = append(*buf, data...)
			*next = ev.Offset + int64(len(data))
			total += int64(len(data))
			changed = true
		case "gap":
			if ev.Stream == api.StreamStderr {
				out.StderrLost += ev.Lost
				out.StderrOffset = ev.Offset
			} else {
				out.StdoutLost += ev.Lost
				out.StdoutOffset = ev.Offset
			}
			changed = true
		case "exit":
			if ev.Exit != nil {
				out.Process = *ev.Exit
			}
			return out, nil
		}
	}
}
