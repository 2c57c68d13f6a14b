package process

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/procgroup"
	"golang.org/x/sys/unix"
)

// readChunkBytes is the size of one read from a process's output.
const readChunkBytes = 32 << 10

// eot is what "close stdin" types on a terminal: ^D, end of input for the
// line discipline (a PTY has no separate stdin to close).
const eot = 0x04

// Process is one detached process. It outlives the call that started it;
// its status and output stay readable until the retention after exit ends.
type Process struct {
	m         *Manager
	id        string
	pid       int // also its process group id
	argv      []string
	tag       string
	startedAt time.Time
	cmd       *exec.Cmd

	stdout, stderr *Ring
	// tty is the PTY master (nil without a PTY): output, input and resize.
	tty *os.File
	// ttyMu orders resizes (an ioctl on the raw fd, which os.File does not
	// guard) before the tty's close, so a resize never hits a reused fd.
	ttyMu     sync.RWMutex
	ttyClosed bool
	// stdin is the write end of stdin (the tty with a PTY), nil when the
	// process was started without stdin.
	stdin       *os.File
	stdinMu     sync.Mutex // one writer at a time, so writes do not interleave
	stdinClosed bool
	// ttyLine is the length of the terminal's current input line (since
	// the last end of line we wrote), guarded by stdinMu.
	ttyLine int

	timer     *time.Timer
	timerDone chan struct{} // closed when the timer's kill has run
	timedOut  atomic.Bool

	readers sync.WaitGroup
	// leaderDone is closed once the leader has exited (status set); done
	// once the process counts as exited: leader gone and output drained.
	leaderDone chan struct{}
	done       chan struct{}

	// leader signals the leader alone, and stops doing so once it may be
	// reaped (its pid could then be someone else's).
	leader *procgroup.Leader
	// grp holds the whole tree; the tree lives on, listed and killable,
	// after the leader's exit while background children are left in it.
	grp group
	// exec marks the record of an Exec whose background children outlived it.
	exec bool

	// settleMu orders settle calls; settled says the tree is gone, its
	// group removed and its reservation released.
	settleMu sync.Mutex
	settled  atomic.Bool

	mu       sync.Mutex
	exitCode int
	signal   string
	exitAt   time.Time
}

// ID is the process's id in the daemon.
func (p *Process) ID() string { return p.id }

// PID is the leader's pid, which is also the process group's id.
func (p *Process) PID() int { return p.pid }

// Done is closed when the process has exited and all its output is in the rings.
func (p *Process) Done() <-chan struct{} { return p.done }

// LeaderExited is closed as soon as the leader has exited, before its
// output is drained; ExitStatus then answers.
func (p *Process) LeaderExited() <-chan struct{} { return p.leaderDone }

// ExitStatus is the leader's exit code and signal name, once LeaderExited.
func (p *Process) ExitStatus() (code int, signal string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitCode, p.signal
}

// Holds reports whether pid is the process or a process of its tree.
func (p *Process) Holds(pid int) bool {
	return pid == p.pid || (!p.settled.Load() && p.grp.holds(pid))
}

// CgroupDirs are the directories of the process's cgroups, one per
// hierarchy; none without containment, or once the tree is gone.
func (p *Process) CgroupDirs() []string {
	if p.settled.Load() {
		return nil
	}
	return p.grp.dirs()
}

// Output is the ring of one stream (with a PTY, stderr stays empty).
func (p *Process) Output(s api.Stream) (*Ring, error) {
	switch s {
	case api.StreamStdout:
		return p.stdout, nil
	case api.StreamStderr:
		return p.stderr, nil
	}
	return nil, api.Errorf(api.KindInvalidArgument, "unknown stream %q: stdout or stderr", s)
}

func (p *Process) exitedAt() (time.Time, bool) {
	select {
	case <-p.done:
	default:
		return time.Time{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitAt, true
}

// Info describes the process now.
func (p *Process) Info() api.ProcessInfo {
	info := api.ProcessInfo{
		ID: p.id, PID: p.pid, Argv: p.argv, Tag: p.tag, PTY: p.tty != nil, Exec: p.exec,
		State: api.StateRunning, TimedOut: p.timedOut.Load(), StartedAt: p.startedAt,
		StdoutBytes: p.stdout.End(), StderrBytes: p.stderr.End(),
	}
	if at, ok := p.exitedAt(); ok {
		p.mu.Lock()
		code := p.exitCode
		info.State, info.ExitCode, info.Signal, info.ExitedAt = api.StateExited, &code, p.signal, &at
		p.mu.Unlock()
	}
	if !p.settled.Load() {
		info.Descendants = descendants(p.grp.members(), p.pid)
		if len(info.Descendants) == 0 && info.State == api.StateExited {
			p.settle() // the tree just emptied: no need to wait for the janitor
		}
	}
	return info
}

func (p *Process) errExited() error {
	return api.Errorf(api.KindInvalidArgument, "process %s has exited", p.id).WithHint("read its status with GET /v1/processes/" + p.id)
}

// Signal sends sig to every process of the tree (tree), or to the leader
// only. SIGKILL to the tree kills it through its cgroup. A tree outlives
// its leader while background children are left in it, and stays
// signallable through its cgroup (never through a pid that may have been
// reused); the leader alone is refused once it has exited.
func (p *Process) Signal(sig syscall.Signal, tree bool) error {
	var err error
	switch {
	case !tree:
		err = p.leader.Signal(sig, false)
	case p.settled.Load():
		return p.errExited()
	default:
		err = p.grp.signal(sig)
	}
	if err != nil {
		if gone(err) || errors.Is(err, errTreeGone) {
			return p.errExited()
		}
		return api.Errorf(api.KindEnv, "signal %s to process %s: %w", SignalName(sig), p.id, err)
	}
	return nil
}

// killTree kills the whole tree: the leader and everything it started.
func (p *Process) killTree() { _ = p.grp.kill() }

// settle ends the process's hold on the Manager once its leader has exited
// and its tree is empty: the group is removed and the process counts no
// more against MaxProcesses. It answers whether that is done.
func (p *Process) settle() bool {
	p.settleMu.Lock()
	defer p.settleMu.Unlock()
	if p.settled.Load() {
		return true
	}
	select {
	case <-p.leaderDone:
	default:
		return false
	}
	if !p.grp.empty() {
		return false
	}
	if err := p.grp.remove(); err != nil {
		p.m.log.Debug("cannot remove the group of an exited process yet", "id", p.id, "err", err)
		return false
	}
	p.settled.Store(true)
	p.m.settled(p)
	return true
}

// Resize changes the terminal size of a PTY process.
func (p *Process) Resize(size api.PTYSize) error {
	if p.tty == nil {
		return api.Errorf(api.KindInvalidArgument, "process %s has no PTY to resize (start it with pty)", p.id)
	}
	if size.Cols == 0 || size.Rows == 0 {
		return api.Errorf(api.KindInvalidArgument, "pty size %dx%d: cols and rows must be positive", size.Cols, size.Rows)
	}
	p.ttyMu.RLock()
	defer p.ttyMu.RUnlock()
	if p.ttyClosed {
		return p.errExited()
	}
	// Through the raw connection, not pty.Setsize: that takes Fd(), which
	// would put the master back into blocking mode (see pollable).
	rc, err := p.tty.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: size.Cols, Row: size.Rows})
		})
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EBADF) {
			return p.errExited()
		}
		return api.Errorf(api.KindEnv, "resize process %s: %w", p.id, err)
	}
	return nil
}

// pump copies one output pipe into its ring until the pipe ends, or into
// attached when the caller took the stream (the ring then stays empty, and
// attached is closed at the end).
func (p *Process) pump(f *os.File, ring *Ring, attached io.WriteCloser) {
	defer p.readers.Done()
	defer ring.Close()
	if attached != nil {
		defer attached.Close()
		copyOutput(f, attached, make([]byte, readChunkBytes))
		return
	}
	copyOutput(f, ring, make([]byte, readChunkBytes))
}

// wait reaps the leader, lets the output drain, then records the exit.
func (p *Process) wait(outputs []*os.File) {
	defer p.m.wg.Done()
	err := p.leader.Reap(p.cmd.Wait)
	// Wait for a timer that already fired, so its verdict is in before the
	// exit is recorded.
	if p.timer != nil && !p.timer.Stop() {
		<-p.timerDone
	}
	code, sig := exitStatus(p.cmd.ProcessState, err)
	p.mu.Lock()
	p.exitCode, p.signal = code, sig
	p.mu.Unlock()
	close(p.leaderDone)

	// A background child may hold the output open: after DrainGrace the
	// process counts as exited; what it wrote until then is kept.
	drained := make(chan struct{})
	go func() { p.readers.Wait(); close(drained) }()
	waitOutput(drained, outputs, DrainGrace)
	p.closeOutputs(outputs)
	if p.stdin != nil && p.stdin != p.tty {
		p.stdinMu.Lock()
		p.stdinClosed = true
		_ = p.stdin.Close()
		p.stdinMu.Unlock()
	}

	p.mu.Lock()
	p.exitAt = p.m.opts.Clock.Now()
	p.mu.Unlock()
	p.m.exited(p)
	close(p.done)
}

func (p *Process) closeOutputs(outputs []*os.File) {
	p.ttyMu.Lock()
	defer p.ttyMu.Unlock()
	p.ttyClosed = true
	for _, f := range outputs {
		_ = f.Close()
	}
}

// outputBytes is the storage the process's rings hold.
func (p *Process) outputBytes() int64 {
	return int64(p.stdout.storage() + p.stderr.storage())
}

// releaseOutput frees the rings' storage of an exited process and answers
// how much that was; offsets and byte counts stay.
func (p *Process) releaseOutput() int64 {
	return int64(p.stdout.release() + p.stderr.release())
}

// exitStatus reads the exit code and signal from a reaped process. A
// process killed by signal N reports exit code 128+N, as shells do.
func exitStatus(ps *os.ProcessState, err error) (int, string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), SignalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}
