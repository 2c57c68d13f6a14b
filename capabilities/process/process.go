package process

import (
	"context"
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

	timer     *time.Timer
	timerDone chan struct{} // closed when the timer's kill has run
	timedOut  atomic.Bool

	readers sync.WaitGroup
	done    chan struct{} // closed once exited: status set, rings closed

	// leader signals the group, and stops doing so once the leader may be
	// reaped (its pid could then be someone else's).
	leader *procgroup.Leader

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
		ID: p.id, PID: p.pid, Argv: p.argv, Tag: p.tag, PTY: p.tty != nil,
		State: api.StateRunning, TimedOut: p.timedOut.Load(), StartedAt: p.startedAt,
		StdoutBytes: p.stdout.End(), StderrBytes: p.stderr.End(),
	}
	if at, ok := p.exitedAt(); ok {
		p.mu.Lock()
		code := p.exitCode
		info.State, info.ExitCode, info.Signal, info.ExitedAt = api.StateExited, &code, p.signal, &at
		p.mu.Unlock()
	}
	return info
}

func (p *Process) errExited() error {
	return api.Errorf(api.KindInvalidArgument, "process %s has exited", p.id).WithHint("read its status with GET /v1/processes/" + p.id)
}

// Signal sends sig to the process's whole group, or to the leader only.
// Once the leader has exited the signal is refused: its pid may already
// name another process.
func (p *Process) Signal(sig syscall.Signal, group bool) error {
	if err := p.leader.Signal(sig, group); err != nil {
		if errors.Is(err, syscall.ESRCH) || errors.Is(err, procgroup.ErrReaped) {
			return p.errExited()
		}
		return api.Errorf(api.KindEnv, "signal %s to process %s: %w", SignalName(sig), p.id, err)
	}
	return nil
}

// killGroup kills the whole tree: the leader and everything in its group.
func (p *Process) killGroup() { _ = p.leader.Signal(syscall.SIGKILL, true) }

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

// WriteStdin copies r to the process's stdin until r ends or ctx is done;
// closeAfter then closes stdin (types ^D on a PTY).
func (p *Process) WriteStdin(ctx context.Context, r io.Reader, closeAfter bool) (int64, error) {
	if p.stdin == nil {
		return 0, api.Errorf(api.KindInvalidArgument, "process %s was started without stdin (start it with stdin or pty)", p.id)
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinClosed {
		return 0, api.Errorf(api.KindInvalidArgument, "stdin of process %s is already closed", p.id)
	}
	// A process that does not read blocks the write; the caller's context
	// must still end it, so it moves the write deadline into the past.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = p.stdin.SetWriteDeadline(time.Unix(1, 0))
	})
	n, err := io.Copy(p.stdin, r)
	if !stop() {
		<-fired
		_ = p.stdin.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return n, api.Errorf(api.KindCancelled, "stdin of process %s: write cancelled after %d bytes", p.id, n)
		case errors.Is(err, os.ErrClosed), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EIO):
			return n, api.Errorf(api.KindInvalidArgument, "process %s no longer reads stdin (it exited or closed it) after %d bytes", p.id, n)
		}
		return n, api.Errorf(api.KindEnv, "stdin of process %s: %w", p.id, err)
	}
	if closeAfter {
		return n, p.closeStdinLocked()
	}
	return n, nil
}

// CloseStdin closes the process's stdin (types ^D on a PTY).
func (p *Process) CloseStdin() error {
	if p.stdin == nil {
		return api.Errorf(api.KindInvalidArgument, "process %s was started without stdin", p.id)
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinClosed {
		return nil
	}
	return p.closeStdinLocked()
}

func (p *Process) closeStdinLocked() error {
	if p.tty != nil {
		if _, err := p.tty.Write([]byte{eot}); err != nil {
			return p.errExited()
		}
		return nil
	}
	p.stdinClosed = true
	_ = p.stdin.Close()
	return nil
}

// pump copies one output pipe into its ring until the pipe ends.
func (p *Process) pump(f *os.File, ring *Ring) {
	defer p.readers.Done()
	defer ring.Close()
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
	p.exitCode, p.signal, p.exitAt = code, sig, p.m.opts.Clock.Now()
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
