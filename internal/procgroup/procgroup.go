// Package procgroup signals the process group of a child we started, safely.
//
// A process-group id is the leader's pid. Once the leader is reaped and its
// group is empty, the kernel may hand that number to an unrelated process,
// and kill(-pgid) would then hit a stranger's whole group: on a busy machine
// with a small pid_max this happens within minutes. A Leader therefore
// waits for its leader's exit without reaping it (a zombie keeps its pid
// taken), and refuses every signal from the moment the leader may be reaped.
package procgroup

import (
	"errors"
	"sync"
	"syscall"
)

// ErrReaped says the leader was reaped: its pid no longer names our group.
var ErrReaped = errors.New("the process has exited and was reaped")

// Leader is the leader of a process group we started (Setpgid or Setsid).
type Leader struct {
	// running is held (read) by WhileRunning callers and (write) by the
	// reap's mark, so the mark waits for them; mu guards reaped.
	running sync.RWMutex
	mu      sync.Mutex
	pid     int
	reaped  bool
}

// New guards the group led by pid.
func New(pid int) *Leader { return &Leader{pid: pid} }

// PID is the leader's pid, which is also the group's id.
func (l *Leader) PID() int { return l.pid }

// Reaped reports whether the leader has exited (and may be reaped): from
// then on its pid no longer names our group.
func (l *Leader) Reaped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reaped
}

// Signal sends sig to the whole group (group) or to the leader only. It
// holds the lock across the kill so that the reap cannot slip in between.
func (l *Leader) Signal(sig syscall.Signal, group bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reaped {
		return ErrReaped
	}
	if l.pid <= 1 {
		// kill(-1) is every process we may signal; kill(0) is our own group.
		return errors.New("procgroup: refusing to signal pid <= 1")
	}
	target := l.pid
	if group {
		target = -l.pid
	}
	return syscall.Kill(target, sig)
}

// Pinned runs f with the leader's pid unless the leader may have been
// reaped, and answers whether f ran. While f runs the leader cannot be
// marked reaped, so its pid (and the process group and session ids named
// after it, which the kernel hands out to no one while in use) name our
// leader's. f must not signal through l.
func (l *Leader) Pinned(f func(pid int)) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reaped {
		return false
	}
	f(l.pid)
	return true
}

// WhileRunning runs f unless the leader may have been reaped, and keeps
// the reap from being marked while f runs; it answers whether f ran. A timeout uses it: it is a timeout only while the leader runs.
func (l *Leader) WhileRunning(f func()) bool {
	l.running.RLock()
	defer l.running.RUnlock()
	if l.Reaped() {
		return false
	}
	f() // may signal through l: the lock it takes is mu, not running
	return true
}

// Reap reaps the leader with wait (exec.Cmd.Wait) and marks it reaped, so
// that no signal can go out under a pid that may already be someone else's.
// On Linux the mark is set while the exited leader is still an unreaped
// zombie; elsewhere right after wait returns (a window of microseconds).
func (l *Leader) Reap(wait func() error) error {
	if waitNoReap(l.pid) {
		l.markReaped()
		return wait()
	}
	err := wait()
	l.markReaped()
	return err
}

func (l *Leader) markReaped() {
	l.running.Lock()
	defer l.running.Unlock()
	l.mu.Lock()
	l.reaped = true
	l.mu.Unlock()
}
