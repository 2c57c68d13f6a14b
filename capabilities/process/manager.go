package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/cgroup"
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
	// DefaultStdinStallWait bounds how long a write to a process's stdin
	// may wait for the process to read: past it the write answers with
	// what was accepted, rather than hold its caller until the process exits.
	DefaultStdinStallWait = 10 * time.Second
	// SettlePoll is how often the janitor looks whether the trees of
	// exited leaders (their background children) have emptied, to remove
	// their cgroups and count them no more against MaxProcesses.
	SettlePoll = time.Second
	// DefaultStraySweepInterval is how often the janitor looks for
	// processes that left their tree's cgroup (a root process can, in v1
	// hierarchies and in cgroup2 without nsdelegate) and logs them; a
	// signal or kill of a tree looks too, and reaches them.
	DefaultStraySweepInterval = 10 * time.Second
	// CloseGrace is how long Close gives every tree after SIGTERM before it
	// kills what is left (systemd's KillMode=control-group, in small).
	CloseGrace = 2 * time.Second
	// KillWait bounds how long Exec waits, after killing a tree (timeout,
	// caller gone), for the tree to be gone before it answers.
	KillWait = 2 * time.Second
	// closeWait bounds how long Close waits for killed processes to be reaped.
	closeWait = 5 * time.Second
	// emptyPoll is how often a wait for a killed tree to empty looks.
	emptyPoll = 5 * time.Millisecond
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
	// StraySweepInterval is how often processes that left their tree's
	// cgroup are looked for.
	StraySweepInterval time.Duration
	// StdinStallWait bounds a stdin write to a process that does not read.
	StdinStallWait time.Duration
	Clock          Clock
	Logger         *slog.Logger

	// Containment is ContainmentAuto ("" too) or ContainmentOff.
	Containment string
	// TreePidsMax and TreeMemoryMax bound each process tree (pids.max and
	// memory.max of its cgroup), ChildrenPidsMax and ChildrenMemoryMax all
	// trees together. Zero takes the default of internal/cgroup
	// (DefaultLimits), a negative value enforces none.
	TreePidsMax, TreeMemoryMax         int64
	ChildrenPidsMax, ChildrenMemoryMax int64
	// Display, when set, is the DISPLAY of every child whose request does
	// not set one: the daemon's display, also when it started its own.
	// Xauthority, when set, is likewise its XAUTHORITY: the cookie of a
	// display the daemon started, which lets in nobody else.
	Display, Xauthority string
	// PulseServer, when set, is likewise its PULSE_SERVER: the sound
	// server the daemon started beside its display, so that what a child
	// plays goes to the desktop's sink.
	PulseServer string
	// SessionBus, when set, is likewise its DBUS_SESSION_BUS_ADDRESS: the
	// session bus the daemon started beside its display, with the
	// accessibility bus on it. A child then also gets the switches that
	// make its toolkit expose its widgets there (accessibilityEnv), each
	// unless the request sets its own.
	SessionBus string
}

// accessibilityEnv are the variables that make GTK (its ATK bridge), Qt
// and Chromium (Electron) expose their widgets on the accessibility bus:
// what a child of a daemon with its own accessibility bus gets
// (SessionBus).
var accessibilityEnv = [][2]string{
	{"GTK_MODULES", "gail:atk-bridge"},
	{"QT_ACCESSIBILITY", "1"},
	{"ACCESSIBILITY_ENABLED", "1"},
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
	if o.StraySweepInterval <= 0 {
		o.StraySweepInterval = DefaultStraySweepInterval
	}
	if o.StdinStallWait <= 0 {
		o.StdinStallWait = DefaultStdinStallWait
	}
	if o.Containment == "" {
		o.Containment = ContainmentAuto
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Manager runs processes: one-shot Exec and detached ones it remembers
// until their retention after exit runs out. Each runs in a group of its
// own (a cgroup, or without containment a process group) that holds its
// whole tree: background children of an exited leader stay listed,
// counted and killable under the process they came from.
type Manager struct {
	opts    Options
	log     *slog.Logger
	env     []string // children's base environment (BaseEnv, DISPLAY, ...)
	contain containment
	// resetOOM says children must not inherit the daemon's negative OOM bias.
	resetOOM bool

	// ctx ends at Close: running Execs and detached processes are killed.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	procs   map[string]*Process
	running int
	closed  bool
	// unsettled are the processes whose tree still holds a reservation
	// (leader running, or background children left); execs are the
	// groups of Execs in flight.
	unsettled map[*Process]struct{}
	execs     map[group]struct{}
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
	restoreIgnored()
	ctx, cancel := context.WithCancel(context.Background())
	env := BaseEnv()
	if opts.Xauthority != "" {
		env = setEnv(env, "XAUTHORITY", opts.Xauthority)
	}
	if opts.Display != "" {
		env = setEnv(env, "DISPLAY", opts.Display)
	}
	if opts.PulseServer != "" {
		env = setEnv(env, "PULSE_SERVER", opts.PulseServer)
	}
	if opts.SessionBus != "" {
		env = setEnv(env, "DBUS_SESSION_BUS_ADDRESS", opts.SessionBus)
		for _, kv := range accessibilityEnv {
			env = setEnv(env, kv[0], kv[1])
		}
	}
	contain, err := openContainment(&opts)
	if err != nil {
		opts.Logger.Warn("process trees are not contained: they run in process groups, which setsid leaves", "why", err)
	} else {
		info := contain.info()
		opts.Logger.Info("process trees run in cgroups", "mode", info.Mode, "tree_pids_max", info.Group.PidsMax,
			"tree_memory_max", info.Group.MemoryMax, "children_pids_max", info.All.PidsMax,
			"children_memory_max", info.All.MemoryMax, "cgroup_namespace", info.Namespaced, "note", info.Note)
	}
	m := &Manager{
		opts:        opts,
		log:         opts.Logger,
		env:         env,
		contain:     contain,
		resetOOM:    protectedFromOOM(),
		ctx:         ctx,
		cancel:      cancel,
		procs:       map[string]*Process{},
		unsettled:   map[*Process]struct{}{},
		execs:       map[group]struct{}{},
		janitorDone: make(chan struct{}),
	}
	m.wg.Add(1)
	go m.janitor()
	return m
}

// Limits reports the bounds in force.
func (m *Manager) Limits(l *api.Limits) {
	l.MaxExecOutputBytes = m.opts.MaxExecOutputBytes
	l.ProcessRingBytes = int64(m.opts.RingBytes)
	l.MaxProcesses = m.opts.MaxProcesses
	l.ExitRetentionSeconds = int(m.opts.ExitRetention.Seconds())
	info := m.contain.info()
	l.ProcessContainment = string(info.Mode)
	l.ProcessContainmentNote = info.Note
	l.ProcessPidsMax, l.ProcessMemoryMaxBytes = info.Group.PidsMax, info.Group.MemoryMax
	l.ChildrenPidsMax, l.ChildrenMemoryMaxBytes = info.All.PidsMax, info.All.MemoryMax
}

// Containment says how process trees are held ("cgroup2", "hybrid",
// "cgroup1" or "off") and, when something is missing, why.
func (m *Manager) Containment() (mode, note string) {
	info := m.contain.info()
	return string(info.Mode), info.Note
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
		if _, live := m.unsettled[p]; live {
			continue // its tree lives on: still listed, counted and killable
		}
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
	settle := time.NewTicker(SettlePoll)
	defer settle.Stop()
	strays := time.NewTicker(m.opts.StraySweepInterval)
	defer strays.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-settle.C:
			m.settleAll()
		case <-strays.C:
			m.sweepStrays()
		case <-t.C:
			if n := m.Reap(); n > 0 {
				m.log.Debug("forgot exited processes past retention", "count", n)
			}
		}
	}
}

// settleAll settles every process whose tree may have emptied.
func (m *Manager) settleAll() {
	m.mu.Lock()
	ps := make([]*Process, 0, len(m.unsettled))
	for p := range m.unsettled {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.settle()
	}
}

// sweepStrays logs the processes found outside their tree's cgroup, in
// every tree that lives (running, or background children left).
func (m *Manager) sweepStrays() {
	m.mu.Lock()
	trees := make([]group, 0, len(m.unsettled)+len(m.execs))
	for p := range m.unsettled {
		trees = append(trees, p.grp)
	}
	for g := range m.execs {
		trees = append(trees, g)
	}
	m.mu.Unlock()
	if len(trees) == 0 || m.contain.info().Mode == cgroup.ModeOff {
		return
	}
	procs := cgroup.ReadProcs() // one look at /proc for every tree
	for _, g := range trees {
		g.sweep(procs)
	}
}

// Close ends every process tree the Manager started (the daemon is going
// away and nobody could reach them any more), as systemd's
// KillMode=control-group does: SIGTERM to every process of every tree,
// CloseGrace for them to exit, then SIGKILL through the cgroup to what is
// left. It then waits for the leaders to be reaped, removes the cgroups
// and stops the janitor.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	var trees []group
	ps := make([]*Process, 0, len(m.unsettled))
	for p := range m.unsettled {
		ps = append(ps, p)
		trees = append(trees, p.grp)
	}
	for g := range m.execs {
		trees = append(trees, g)
	}
	m.mu.Unlock()
	for _, g := range trees {
		_ = g.signal(syscall.SIGTERM)
	}
	waitEmpty(trees, CloseGrace)
	m.cancel() // Execs in flight kill their trees; the janitor stops
	for _, g := range trees {
		_ = g.kill()
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		m.log.Warn("processes still not reaped after close", "wait", closeWait)
	}
	waitEmpty(trees, closeWait)
	for _, p := range ps {
		p.settle()
	}
	if err := m.contain.close(); err != nil {
		m.log.Warn("removing the process cgroups", "err", err)
	}
}

// waitEmpty waits until every tree is empty, at most wait.
func waitEmpty(trees []group, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for _, g := range trees {
		for !g.empty() && time.Now().Before(deadline) {
			time.Sleep(emptyPoll)
		}
	}
}

// started is called with the leader's pid of every process that started.
func (m *Manager) started(pid int) {
	if m.resetOOM {
		unprotectOOM(pid)
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "p" + hex.EncodeToString(b[:])
}
