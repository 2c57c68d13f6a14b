package process_test

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

// heldClock is a clock that moves only when the test moves it.
type heldClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *heldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *heldClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newManager(t *testing.T, opts process.Options) *process.Manager {
	t.Helper()
	if opts.Containment == "" {
		// CUA_TEST_CONTAINMENT=off runs the tests on process groups, as a
		// host without writable cgroups does.
		opts.Containment = os.Getenv("CUA_TEST_CONTAINMENT")
	}
	m := process.NewManager(opts)
	t.Cleanup(m.Close)
	return m
}

// collect reads every event of a process's output until exit, and returns
// the bytes of each stream and the exit info.
func collect(t *testing.T, p *process.Process, outOff, errOff int64) (stdout, stderr []byte, exit *api.ProcessInfo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := p.Subscribe(outOff, errOff)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	for {
		ev, err := s.Next(ctx)
		if err == io.EOF {
			return stdout, stderr, exit
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		switch ev.Type {
		case "output":
			if ev.Stream == api.StreamStdout {
				stdout = append(stdout, ev.Data...)
			} else {
				stderr = append(stderr, ev.Data...)
			}
		case "gap":
			t.Fatalf("unexpected gap: %+v", ev)
		case "exit":
			exit = ev.Exit
		}
	}
}

func waitDone(t *testing.T, p *process.Process) api.ProcessInfo {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatalf("process %s did not exit", p.ID())
	}
	return p.Info()
}
