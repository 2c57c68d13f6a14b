package process

import (
	"context"
	"io"

	"github.com/trycua/cua-spacesd/api"
)

// EventChunkBytes bounds the data of one "output" event.
const EventChunkBytes = 32 << 10

// Subscriber reads a process's output from chosen offsets as a sequence of
// events: "output" (bytes in order, per stream), "gap" (the ring dropped
// bytes before the reader got them: where data resumes and how much was
// lost), then one "exit" after the last byte of both streams.
type Subscriber struct {
	p     *Process
	rings [2]*Ring
	names [2]api.Stream
	off   [2]int64
	buf   []byte
	turn  int // which stream is read first next time, for fairness
	ended bool
}

// Subscribe starts reading at stdoutOff and stderrOff. An offset past what
// the stream produced so far is invalid_argument.
func (p *Process) Subscribe(stdoutOff, stderrOff int64) (*Subscriber, error) {
	s := &Subscriber{
		p:     p,
		rings: [2]*Ring{p.stdout, p.stderr},
		names: [2]api.Stream{api.StreamStdout, api.StreamStderr},
		off:   [2]int64{stdoutOff, stderrOff},
		buf:   make([]byte, EventChunkBytes),
	}
	for i, r := range s.rings {
		if end := r.End(); s.off[i] < 0 || s.off[i] > end {
			return nil, api.Errorf(api.KindInvalidArgument,
				"%s offset %d is outside 0..%d (the bytes %s produced so far)", s.names[i], s.off[i], end, p.id)
		}
	}
	return s, nil
}

// Offsets are the offsets the next bytes of each stream will have; a client
// that reconnects from them loses nothing the ring still holds.
func (s *Subscriber) Offsets() (stdout, stderr int64) { return s.off[0], s.off[1] }

// Next waits for the next event. Its Data is valid until the next call.
// After the "exit" event it answers io.EOF.
func (s *Subscriber) Next(ctx context.Context) (*api.StreamEvent, error) {
	for {
		if s.ended {
			return nil, io.EOF
		}
		var waits [2]<-chan struct{}
		eof := 0
		for k := range 2 {
			i := (s.turn + k) % 2
			c := s.rings[i].ReadAt(s.buf, s.off[i])
			if c.From > s.off[i] {
				ev := &api.StreamEvent{Type: "gap", Stream: s.names[i], Offset: c.From, Lost: c.From - s.off[i]}
				s.off[i] = c.From
				return ev, nil
			}
			if c.N > 0 {
				ev := &api.StreamEvent{Type: "output", Stream: s.names[i], Offset: c.From, Data: s.buf[:c.N]}
				s.off[i] += int64(c.N)
				s.turn = (i + 1) % 2
				return ev, nil
			}
			if c.EOF {
				eof++
			} else {
				waits[i] = c.Changed
			}
		}
		if eof == 2 {
			select {
			case <-s.p.done:
				info := s.p.Info()
				s.ended = true
				return &api.StreamEvent{Type: "exit", Exit: &info}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		// A nil channel never fires: a finished stream just drops out.
		select {
		case <-waits[0]:
		case <-waits[1]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
