package process

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/procgroup"
)

// ExecWaitDelay bounds how long Exec waits for output pipes after the
// command exited: a background child (`server &`) that keeps them open must
// not hold the answer forever. What was written until then is kept.
const ExecWaitDelay = 2 * time.Second

// execReadBytes is the read size of Exec's output pipes: one pipe buffer.
const execReadBytes = 64 << 10

// Exec runs a command to completion and answers its output and status. A
// timeout (or the caller's context ending, or Close) kills the whole tree.
// Background children of a command that finished live on as a process
// record (ExecResult.ProcessID) until they are gone.
//
// It is the daemon's hot path: one fork/exec into a cgroup made ahead (see
// internal/cgroup's pool), two pipes and their readers, and nothing else
// per call. The pipes are ours rather than os/exec's so that a late reader
// never loses output (see copyOutput).
func (m *Manager) Exec(ctx context.Context, req api.ExecRequest) (*api.ExecResult, error) {
	r, err := m.prepareExec(&req)
	if err != nil {
		return nil, err
	}
	defer r.closePipes()
	if err := m.startExec(r, &req.Command); err != nil {
		return nil, err
	}
	waitErr, timedOut, cancelled := m.waitExec(ctx, r, req.TimeoutMS)
	res := r.result(waitErr, timedOut)
	m.settleExec(r, res)
	if cancelled {
		return res, api.Errorf(api.KindCancelled, "exec %s: %s; the command was killed", r.cmd.Args[0], cancelReason(ctx))
	}
	return res, nil
}

// execRun is one Exec on its way: the command with its output pipes and
// buffers, and from its start on, its cgroup and its leader.
type execRun struct {
	cmd            *exec.Cmd
	stdout, stderr *cappedBuffer
	// outR and errR are ours, read to EOF; outW and errW are the child's,
	// closed once it has its copies, so that EOF comes when it is done.
	outR, outW, errR, errW *os.File
	readersDone            chan struct{} // both outputs read

	id        string
	grp       group
	leader    *procgroup.Leader
	start     time.Time // of DurationMS (monotonic)
	startedAt time.Time // on the Manager's clock, for a lingering record
}

// prepareExec checks req and builds its command, with the pipes its
// output goes to; nothing runs yet.
func (m *Manager) prepareExec(req *api.ExecRequest) (*execRun, error) {
	if err := ValidateCommand(&req.Command); err != nil {
		return nil, err
	}
	limit := m.opts.MaxExecOutputBytes
	switch {
	case req.MaxOutputBytes < 0:
		return nil, api.Errorf(api.KindInvalidArgument, "max_output_bytes=%d must be 0 (the daemon's limit) or positive", req.MaxOutputBytes)
	case req.MaxOutputBytes > limit:
		return nil, api.Errorf(api.KindInvalidArgument, "max_output_bytes=%d is over this daemon's limit of %d", req.MaxOutputBytes, limit)
	case req.MaxOutputBytes > 0:
		limit = req.MaxOutputBytes
	}
	cmd, err := buildCmd(&req.Command, m.env)
	if err != nil {
		return nil, err
	}
	r := &execRun{cmd: cmd, stdout: &cappedBuffer{limit: limit}, stderr: &cappedBuffer{limit: limit}}
	r.outR, r.outW, err = os.Pipe()
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "exec: pipe: %w", err)
	}
	r.errR, r.errW, err = os.Pipe()
	if err != nil {
		r.closePipes()
		return nil, api.Errorf(api.KindEnv, "exec: pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = r.outW, r.errW
	if req.Stdin != "" {
		cmd.Stdin = strings.NewReader(req.Stdin)
		// os/exec copies a reader into the child's stdin from a goroutine
		// that Wait waits for: a background child that keeps stdin open
		// without reading would hold Wait (and the answer) forever.
		cmd.WaitDelay = ExecWaitDelay
	}
	return r, nil
}

// closePipes closes every end of the output pipes still open.
func (r *execRun) closePipes() {
	for _, f := range []*os.File{r.outR, r.outW, r.errR, r.errW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// startExec reserves a place among MaxProcesses, starts the command in a
// cgroup of its own and reads its output. c is the command as asked, for
// a failure to start.
func (m *Manager) startExec(r *execRun, c *api.Command) error {
	// An Exec is a running process like a detached one: both count against
	// MaxProcesses, so a flood of execs cannot exhaust pids and descriptors.
	if err := m.reserve(); err != nil {
		return err
	}
	r.id = newID()
	// The group exists, with its limits, before the command is born in it.
	grp, err := m.contain.newGroup(r.id)
	if err != nil {
		m.release()
		return api.Errorf(api.KindEnv, "exec %s: cannot create its cgroup: %w", r.cmd.Args[0], err)
	}
	r.grp = grp
	r.start = time.Now()
	err = grp.start(r.cmd.SysProcAttr, r.cmd.Start)
	// The child has its copies; ours must go so EOF comes when it is done.
	r.outW.Close()
	r.errW.Close()
	if err != nil {
		_ = grp.remove()
		m.release()
		return startError(c, r.cmd.Args, r.cmd.Env, err)
	}
	m.started(r.cmd.Process.Pid)
	r.startedAt = m.opts.Clock.Now()
	m.trackExec(grp, true)
	r.readersDone = make(chan struct{})
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		copyOutput(r.errR, r.stderr, make([]byte, execReadBytes))
	}()
	go func() {
		defer close(r.readersDone)
		copyOutput(r.outR, r.stdout, make([]byte, execReadBytes))
		<-stderrDone
	}()
	r.leader = procgroup.New(r.cmd.Process.Pid)
	grp.lead(r.leader)
	return nil
}

// waitExec waits for the command's leader and then its output. The whole
// tree dies when timeoutMS (if any) passes while the leader runs, when ctx
// ends (cancelled) or at Close. It answers the leader's wait error.
func (m *Manager) waitExec(ctx context.Context, r *execRun, timeoutMS int64) (waitErr error, timedOut, cancelled bool) {
	kill := func() { _ = r.grp.kill() }
	// The timer's verdict is read only after the timer is stopped or has
	// finished. It is a timeout only while the leader runs: background
	// children of a command that finished in time live on.
	var (
		timer     *time.Timer
		timerDone = make(chan struct{})
	)
	if timeoutMS > 0 {
		timer = time.AfterFunc(time.Duration(timeoutMS)*time.Millisecond, func() {
			defer close(timerDone)
			timedOut = r.leader.WhileRunning(kill)
		})
	}
	stopCaller := context.AfterFunc(ctx, kill)
	stopClose := context.AfterFunc(m.ctx, kill)

	waitErr = r.leader.Reap(r.cmd.Wait)
	if timer != nil && !timer.Stop() {
		<-timerDone
	}
	waitOutput(r.readersDone, []*os.File{r.outR, r.errR}, ExecWaitDelay)
	// From here on the caller's leaving kills nothing: what is left of the
	// tree is the Manager's (see linger).
	stopCaller()
	stopClose()
	cancelled = !timedOut && ctx.Err() != nil
	if timedOut || cancelled || m.ctx.Err() != nil {
		kill() // once more: the tree may have forked since
		waitEmpty([]group{r.grp}, KillWait)
	}
	return waitErr, timedOut, cancelled
}

// result is what the command answered, given its leader's wait error.
func (r *execRun) result(waitErr error, timedOut bool) *api.ExecResult {
	res := &api.ExecResult{
		Stdout: r.stdout.String(), Stderr: r.stderr.String(),
		StdoutTruncated: r.stdout.truncated, StderrTruncated: r.stderr.truncated,
		TimedOut: timedOut, DurationMS: time.Since(r.start).Milliseconds(),
	}
	res.ExitCode, res.Signal = exitStatus(r.cmd.ProcessState, waitErr)
	return res
}

// settleExec gives back what the Exec held: its cgroup and its place among
// MaxProcesses once the tree is empty, or else the tree to a process record
// that lives on (linger) with its background children.
func (m *Manager) settleExec(r *execRun, res *api.ExecResult) {
	// No more in flight before the group goes back to the tree, which may
	// hand it to another process once it is recycled.
	m.trackExec(r.grp, false)
	if !r.grp.empty() {
		m.linger(r.id, r.cmd.Args, r.leader, r.grp, r.startedAt, res)
		return
	}
	if err := r.grp.remove(); err != nil {
		m.log.Warn("cannot remove an exec's cgroup", "id", r.id, "err", err)
	}
	m.release()
}

// cancelReason names why ctx ended: the cause it carries (a rotated token,
// a shutdown), or that the caller went away.
func cancelReason(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case cause == nil, cause == context.Canceled:
		return "the caller went away"
	case cause == context.DeadlineExceeded:
		return "the caller's deadline passed"
	default:
		return cause.Error()
	}
}

// trackExec adds (or drops) the group of an Exec in flight, so that Close
// can signal it with the rest.
func (m *Manager) trackExec(g group, inFlight bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if inFlight {
		m.execs[g] = struct{}{}
	} else {
		delete(m.execs, g)
	}
}

// linger keeps the tree of an Exec whose leader exited while background
// children (`app &`) live on: it becomes a process record, listed with
// those children, counted against MaxProcesses and killable, until the
// tree is empty. It keeps the Exec's reservation; res learns its id.
func (m *Manager) linger(id string, argv []string, leader *procgroup.Leader, grp group, startedAt time.Time, res *api.ExecResult) {
	done := make(chan struct{})
	close(done)
	stdout, stderr := NewRing(1), NewRing(1)
	stdout.Close()
	stderr.Close()
	p := &Process{
		m: m, id: id, pid: leader.PID(), argv: argv, exec: true, startedAt: startedAt,
		stdout: stdout, stderr: stderr, leader: leader, grp: grp,
		leaderDone: done, done: done,
		exitCode: res.ExitCode, signal: res.Signal, exitAt: m.opts.Clock.Now(),
	}
	p.timedOut.Store(res.TimedOut)
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.procs[id] = p
		m.unsettled[p] = struct{}{}
	}
	m.mu.Unlock()
	if closed {
		// Close ran meanwhile and did not see this tree.
		_ = grp.kill()
		waitEmpty([]group{grp}, KillWait)
		_ = grp.remove()
		m.release()
		return
	}
	res.ProcessID = id
	res.Descendants = descendants(grp.members(), p.pid)
	m.log.Info("background children of an exec live on", "id", id, "pid", p.pid, "descendants", res.Descendants)
}

// cappedBuffer keeps the first limit bytes written and counts the rest away:
// the command keeps running (and is not blocked by a full pipe) but its
// answer stays bounded.
type cappedBuffer struct {
	buf       []byte
	limit     int64
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.limit - int64(len(b.buf))
	if int64(len(p)) > room {
		b.truncated = true
		b.buf = append(b.buf, p[:max(room, 0)]...)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *cappedBuffer) String() string { return string(b.buf) }
