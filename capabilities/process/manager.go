package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// Defaults of Options; api.Limits reports the values in force.
const (
	// DefaultRingBytes is the output kept per stream of a detached process.
	DefaultRingBytes = 1 << 20
	// DefaultMaxProcesses bounds the processes (detached ones and Execs in
	// flight) running at once.
	DefaultMaxProcesses = 256
	// DefaultExitRetention keeps an exited process's status and output: the
	// design promises at least 10 minutes.
	DefaultExitRetention = 10 * time.Minute
	// DefaultRetainedOutputBytes bounds the output exited processes keep,
	// all together: without it, a client starting chatty processes in a
	// loop makes the daemon hold up to 2 rings per process for the whole
	// retention. Past it the oldest exited processes lose their output
	// (readers see a gap) and keep their status.
	DefaultRetainedOutputBytes = 64 << 20
	// DefaultMaxExecOutputBytes caps each of stdout and stderr of Exec.
	DefaultMaxExecOutputBytes = 1 << 20
	// DefaultJanitorInterval is how often exited processes past their
	// retention are forgotten.
	DefaultJanitorInterval = 30 * time.Second
	// DrainGrace is how long output pipes may stay open after the leader
	// exited (a background child holding them) before they are closed and
	// the process counts as exited.
	DrainGrace = 2 * time.Second
	// closeWait bounds how long Close waits for killed processes to be reaped.
	closeWait = 5 * time.Second
)

// Clock is the time source of a Manager, so a test can hold time still.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options configure a Manager; zero fields take the defaults.
type Options struct {
	RingBytes int
	// RetainedOutputBytes bounds the output storage that exited processes
	// keep, all together.
	RetainedOutputBytes int64
	MaxProcesses        int
	ExitRetention       time.Duration
	MaxExecOutputBytes  int64
	JanitorInterval     time.Duration
	Clock               Clock
	Logger              *slog.Logger
}

func (o *Options) fill() {
	if o.RingBytes <= 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = DefaultMaxProcesses
	}
	if o.ExitRetention <= 0 {
		o.ExitRetention = DefaultExitRetention
	}
	if o.RetainedOutputBytes <= 0 {
		o.RetainedOutputBytes = DefaultRetainedOutputBytes
	}
	if o.MaxExecOutputBytes <= 0 {
		o.MaxExecOutputBytes = DefaultMaxExecOutputBytes
	}
	if o.JanitorInterval <= 0 {
		o.JanitorInterval = DefaultJanitorInterval
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Manager runs processes: one-shot Exec and detached ones it remembers
// until their retention after exit runs out.
type Manager struct {
	opts Options
	log  *slog.Logger
	env  []string // children's base environment (BaseEnv)

	// ctx ends at Close: running Execs and detached processes are killed.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	procs   map[string]*Process
	running int
	closed  bool
	// retained are the exited processes that still hold output, oldest
	// exit first, and retainedBytes their rings' storage.
	retained      []*Process
	retainedBytes int64

	wg          sync.WaitGroup // every goroutine the Manager owns
	janitorDone chan struct{}
}

// NewManager returns a Manager and starts its janitor; Close stops both.
func NewManager(opts Options) *Manager {
	opts.fill()
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts:        opts,
		log:         opts.Logger,
		env:         BaseEnv(),
		ctx:         ctx,
		cancel:      cancel,
		procs:       map[string]*Process{},
		janitorDone: make(chan struct{}),
	}
	m.wg.Add(1)
	go m.janitor()
	return m
}

// Limits reports the bounds in force.
func (m *Manager) Limits() (ringBytes, maxProcesses int, retention time.Duration, maxExecOutput int64) {
	return m.opts.RingBytes, m.opts.MaxProcesses, m.opts.ExitRetention, m.opts.MaxExecOutputBytes
}

// Running is how many processes run now: detached ones and Execs in flight.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running
}

// Get returns a process by id, or not_found.
func (m *Manager) Get(id string) (*Process, error) {
	m.mu.Lock()
	p := m.procs[id]
	m.mu.Unlock()
	if p == nil {
		return nil, api.Errorf(api.KindNotFound, "no process %q (it never existed, or exited more than %s ago)", id, m.opts.ExitRetention)
	}
	return p, nil
}

// List describes every remembered process, oldest first.
func (m *Manager) List() []api.ProcessInfo {
	m.mu.Lock()
	ps := make([]*Process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	out := make([]api.ProcessInfo, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Info())
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Reap forgets exited processes whose retention ran out; the janitor calls
// it, and a test holding time still may call it after moving its clock.
func (m *Manager) Reap() int {
	now := m.opts.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, p := range m.procs {
		if at, ok := p.exitedAt(); ok && now.Sub(at) >= m.opts.ExitRetention {
			delete(m.procs, id)
			n++
		}
	}
	if n > 0 {
		kept := m.retained[:0]
		for _, p := range m.retained {
			if m.procs[p.id] == p {
				kept = append(kept, p)
			} else {
				m.retainedBytes -= p.releaseOutput()
			}
		}
		clear(m.retained[len(kept):])
		m.retained = kept
	}
	return n
}

// retainOutput counts an exited process's output against
// RetainedOutputBytes, releasing the oldest exited processes' output while
// the total is over it (the newest always keeps its own).
func (m *Manager) retainOutput(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retained = append(m.retained, p)
	m.retainedBytes += p.outputBytes()
	for m.retainedBytes > m.opts.RetainedOutputBytes && len(m.retained) > 1 {
		old := m.retained[0]
		m.retained[0] = nil
		m.retained = m.retained[1:]
		m.retainedBytes -= old.releaseOutput()
	}
}

func (m *Manager) janitor() {
	defer m.wg.Done()
	t := time.NewTicker(m.opts.JanitorInterval)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			if n := m.Reap(); n > 0 {
				m.log.Debug("forgot exited processes past retention", "count", n)
			}
		}
	}
}

// Close kills every running process group (a hard shutdown: the daemon is
// going away and nobody could reach them any more), waits for them to be
// reaped, and stops the janitor.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	ps := make([]*Process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	m.cancel()
	for _, p := range ps {
		p.killGroup()
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		m.log.Warn("processes still not reaped after close", "wait", closeWait)
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "p" + hex.EncodeToString(b[:])
}
