package process

import (
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/procgroup"
	"golang.org/x/sys/unix"
)

// Start starts a detached process. It runs until it exits, is signalled,
// times out or the Manager closes, whatever happens to the caller.
func (m *Manager) Start(req api.StartRequest) (*Process, error) {
	return m.start(req, Attach{})
}

// StartAttached starts a detached process whose output streams go to the
// caller's writers instead of the rings (see Attach); it is contained,
// listed and signalled like any other.
func (m *Manager) StartAttached(req api.StartRequest, a Attach) (*Process, error) {
	if req.PTY != nil && (a.Stdout != nil || a.Stderr != nil) {
		return nil, api.Errorf(api.KindInvalidArgument, "a process on a PTY has one output stream, which cannot be attached")
	}
	return m.start(req, a)
}

func (m *Manager) start(req api.StartRequest, a Attach) (*Process, error) {
	if err := ValidateCommand(&req.Command); err != nil {
		return nil, err
	}
	if req.PTY != nil && (req.PTY.Cols == 0 || req.PTY.Rows == 0) {
		return nil, api.Errorf(api.KindInvalidArgument, "pty size %dx%d: cols and rows must be positive", req.PTY.Cols, req.PTY.Rows)
	}
	cmd, err := buildCmd(&req.Command, m.env)
	if err != nil {
		return nil, err
	}
	if err := m.reserve(); err != nil {
		return nil, err
	}
	p := &Process{
		m: m, id: newID(), argv: cmd.Args, tag: req.Tag,
		stdout: NewRing(m.opts.RingBytes), stderr: NewRing(m.opts.RingBytes),
		cmd: cmd, leaderDone: make(chan struct{}), done: make(chan struct{}),
	}
	// The group exists, with its limits, before the process is born in it.
	if p.grp, err = m.contain.newGroup(p.id); err != nil {
		m.release()
		return nil, api.Errorf(api.KindEnv, "start %s: cannot create its cgroup: %w", cmd.Args[0], err)
	}
	var outputs []*os.File
	if req.PTY != nil {
		outputs, err = p.startPTY(cmd, *req.PTY)
	} else {
		outputs, err = p.startPipes(cmd, req.Stdin, a)
	}
	if err != nil {
		_ = p.grp.remove()
		m.release()
		return nil, startError(&req.Command, cmd.Args, cmd.Env, err)
	}
	p.pid = cmd.Process.Pid
	m.started(p.pid)
	p.leader = procgroup.New(p.pid)
	p.grp.lead(p.leader)
	p.startedAt = m.opts.Clock.Now()
	if req.TimeoutMS > 0 {
		p.timerDone = make(chan struct{})
		p.timer = time.AfterFunc(time.Duration(req.TimeoutMS)*time.Millisecond, func() {
			defer close(p.timerDone)
			// A timeout only while the leader runs: background children
			// of a leader that exited in time live on.
			if p.leader.WhileRunning(p.killTree) {
				p.timedOut.Store(true)
			}
		})
	}

	m.mu.Lock()
	m.procs[p.id] = p
	m.unsettled[p] = struct{}{}
	closed := m.closed
	m.mu.Unlock()
	m.wg.Add(1)
	go p.wait(outputs)
	if closed {
		// Close ran between reserve and here; it did not see p.
		p.killTree()
	}
	m.log.Info("process started", "id", p.id, "pid", p.pid, "pty", req.PTY != nil, "tag", req.Tag)
	return p, nil
}

// startPTY runs cmd on a new PTY, in its own session (hence its own group).
func (p *Process) startPTY(cmd *exec.Cmd, size api.PTYSize) ([]*os.File, error) {
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true, Credential: cmd.SysProcAttr.Credential}
	var tty *os.File
	err := p.grp.start(attrs, func() (err error) {
		tty, err = pty.StartWithAttrs(cmd, &pty.Winsize{Cols: size.Cols, Rows: size.Rows}, attrs)
		return err
	})
	if err != nil {
		return nil, err
	}
	tty = pollable(tty)
	p.tty, p.stdin = tty, tty
	p.stderr.Close() // a terminal has one output stream
	p.readers.Add(1)
	go p.pump(tty, p.stdout, nil)
	return []*os.File{tty}, nil
}

// pollable answers the PTY master as a file the runtime poller manages.
// creack/pty reaches the master through Fd(), which switches it to blocking
// mode for good: read and write deadlines then do nothing, so neither a
// cancelled stdin write nor the drain after exit could wake a blocked call,
// and a background child that keeps the terminal open would keep the
// process "running" forever. A non-blocking duplicate is pollable again.
// Should duplicating fail, the blocking master is kept: the child runs.
func pollable(f *os.File) *os.File {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return f
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return f
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	_ = f.Close()
	return nf
}

// startPipes runs cmd with a pipe per output stream (and stdin on request).
// The pipes are os.Files, so os/exec copies nothing: the pumps read them.
func (p *Process) startPipes(cmd *exec.Cmd, withStdin bool, a Attach) ([]*os.File, error) {
	var opened []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range opened {
			_ = f.Close()
		}
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	opened = append(opened, outR, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	opened = append(opened, errR, errW)
	cmd.Stdout, cmd.Stderr = outW, errW
	var inR, inW *os.File
	if withStdin {
		if inR, inW, err = os.Pipe(); err != nil {
			return fail(err)
		}
		opened = append(opened, inR, inW)
		cmd.Stdin = inR
	}
	if err := p.grp.start(cmd.SysProcAttr, cmd.Start); err != nil {
		return fail(err)
	}
	// The child has its copies; ours of the child's ends must go, or the
	// pumps would never see EOF.
	_ = outW.Close()
	_ = errW.Close()
	if inR != nil {
		_ = inR.Close()
		p.stdin = inW
	}
	p.readers.Add(2)
	go p.pump(outR, p.stdout, a.Stdout)
	go p.pump(errR, p.stderr, a.Stderr)
	return []*os.File{outR, errR}, nil
}

// reserve counts a process against MaxProcesses before it starts. At the
// limit it first settles the trees that emptied since the janitor looked.
func (m *Manager) reserve() error {
	m.mu.Lock()
	full := m.running >= m.opts.MaxProcesses
	m.mu.Unlock()
	if full {
		m.settleAll()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return api.Errorf(api.KindEnv, "the process manager is shutting down")
	}
	if m.running >= m.opts.MaxProcesses {
		return api.Errorf(api.KindLimitExceeded,
			"%d processes are running (or their background children are), the most this daemon runs at once", m.running).
			WithHint("wait for some to exit, or signal them (GET /v1/processes lists them)")
	}
	m.running++
	return nil
}

func (m *Manager) release() {
	m.mu.Lock()
	m.running--
	m.mu.Unlock()
}

// exited is called once per process when it has exited. Its reservation
// stays until its tree is gone too (settle).
func (m *Manager) exited(p *Process) {
	m.retainOutput(p)
	code, sig := p.ExitStatus()
	m.log.Info("process exited", "id", p.id, "pid", p.pid, "code", code, "signal", sig, "timed_out", p.timedOut.Load())
	if !p.settle() {
		m.log.Info("background children of an exited process live on", "id", p.id, "descendants", len(p.grp.members()))
	}
}

// settled is called once per process when its tree is gone.
func (m *Manager) settled(p *Process) {
	m.mu.Lock()
	delete(m.unsettled, p)
	m.running--
	m.mu.Unlock()
}
