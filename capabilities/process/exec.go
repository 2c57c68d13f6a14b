package process

import (
	"context"
	"os"
	"strings"
	"syscall"
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
//
// It is the daemon's hot path: one fork/exec, two pipes and their readers,
// and nothing else per call. The pipes are ours rather than os/exec's so
// that a late reader never loses output (see copyOutput).
func (m *Manager) Exec(ctx context.Context, req api.ExecRequest) (*api.ExecResult, error) {
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
	stdout, stderr := &cappedBuffer{limit: limit}, &cappedBuffer{limit: limit}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "exec: pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, api.Errorf(api.KindEnv, "exec: pipe: %w", err)
	}
	outputs := []*os.File{outR, errR}
	defer func() {
		for _, f := range outputs {
			f.Close()
		}
	}()
	cmd.Stdout, cmd.Stderr = outW, errW
	if req.Stdin != "" {
		cmd.Stdin = strings.NewReader(req.Stdin)
		// os/exec copies a reader into the child's stdin from a goroutine
		// that Wait waits for: a background child that keeps stdin open
		// without reading would hold Wait (and the answer) forever.
		cmd.WaitDelay = ExecWaitDelay
	}

	// An Exec is a running process like a detached one: both count against
	// MaxProcesses, so a flood of execs cannot exhaust pids and descriptors.
	if err := m.reserve(); err != nil {
		return nil, err
	}
	defer m.release()
	start := time.Now()
	err = cmd.Start()
	// The child has its copies; ours must go so EOF comes when it is done.
	outW.Close()
	errW.Close()
	if err != nil {
		return nil, startError(&req.Command, cmd.Args, err)
	}
	readersDone := make(chan struct{})
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		copyOutput(errR, stderr, make([]byte, execReadBytes))
	}()
	go func() {
		defer close(readersDone)
		copyOutput(outR, stdout, make([]byte, execReadBytes))
		<-stderrDone
	}()
	leader := procgroup.New(cmd.Process.Pid)
	kill := func() { _ = leader.Signal(syscall.SIGKILL, true) }
	// The timer's verdict is read only after the timer is stopped or has
	// finished: a kill that raced the command's own exit is no timeout.
	var (
		timedOut  bool
		timer     *time.Timer
		timerDone = make(chan struct{})
	)
	if req.TimeoutMS > 0 {
		timer = time.AfterFunc(time.Duration(req.TimeoutMS)*time.Millisecond, func() {
			defer close(timerDone)
			timedOut = leader.Signal(syscall.SIGKILL, true) == nil
		})
	}
	stopCaller := context.AfterFunc(ctx, kill)
	defer stopCaller()
	stopClose := context.AfterFunc(m.ctx, kill)
	defer stopClose()

	waitErr := leader.Reap(cmd.Wait)
	if timer != nil && !timer.Stop() {
		<-timerDone
	}
	waitOutput(readersDone, outputs, ExecWaitDelay)
	res := &api.ExecResult{
		Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.truncated, StderrTruncated: stderr.truncated,
		TimedOut: timedOut, DurationMS: time.Since(start).Milliseconds(),
	}
	res.ExitCode, res.Signal = exitStatus(cmd.ProcessState, waitErr)
	if !res.TimedOut && ctx.Err() != nil {
		return res, api.Errorf(api.KindCancelled, "exec %s: the caller went away; the command was killed", cmd.Args[0])
	}
	return res, nil
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
