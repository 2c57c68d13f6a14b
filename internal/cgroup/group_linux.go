//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// settlePoll is how often a wait for a cgroup to freeze or to empty looks.
	settlePoll = 2 * time.Millisecond
	// freezeWait bounds the wait for a group to freeze before its members
	// are killed anyway.
	freezeWait = time.Second
	// killLoopWait bounds the kill of a tree without cgroup.kill or freezer.
	killLoopWait = 5 * time.Second
)

// Group is the cgroup (one per hierarchy the tree uses) of one process tree.
type Group struct {
	t    *Tree
	name string
	// fd is an O_PATH descriptor of the cgroup2 directory for
	// CLONE_INTO_CGROUP; -1 without cgroup2. tasks are the v1 cgroups'
	// tasks files, for the forking thread to enter. All are opened when
	// the group is made (off the start's path) and closed after the start.
	fd    int
	tasks []*os.File

	mu      sync.Mutex
	removed bool
	// killed says a kill went to the group. Linux (seen on 6.18) SIGKILLs
	// every child later cloned into a cgroup once cgroup.kill was written
	// to it, so such a group is never recycled.
	killed atomic.Bool
}

// New creates the group name (one path element) with the tree's
// per-group limits, before any process is in it.
func (t *Tree) New(name string) (*Group, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || name == leafName {
		return nil, fmt.Errorf("cgroup name %q: want one path element", name)
	}
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, errors.New("cgroups: the tree is closed")
	}
	g := t.group(name)
	for _, h := range t.hiers() {
		if err := os.Mkdir(g.dir(h), dirMode); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("cgroups: create %s: %w", g.dir(h), err)
		}
	}
	if err := t.applyLimits(t.info.Group, g.dir); err != nil {
		_ = g.Remove()
		return nil, err
	}
	if err := g.open(); err != nil {
		_ = g.Remove()
		return nil, err
	}
	return g, nil
}

// open opens what the group's start needs.
func (g *Group) open() error {
	t := g.t
	if t.v2 != nil {
		fd, err := unix.Open(g.dir(t.v2), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cgroups: open %s: %w", g.dir(t.v2), err)
		}
		g.fd = fd
	}
	for _, h := range t.v1 {
		f, err := os.OpenFile(filepath.Join(g.dir(h), "tasks"), os.O_WRONLY, 0)
		if err != nil {
			g.closeFiles()
			return fmt.Errorf("cgroups: open %s: %w", g.dir(h), err)
		}
		g.tasks = append(g.tasks, f)
	}
	return nil
}

// closeFiles closes what the group holds open for its start.
func (g *Group) closeFiles() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
	for _, f := range g.tasks {
		_ = f.Close()
	}
	g.tasks = nil
}

// group names an existing group of the tree (Close uses it for groups it
// did not make in this run).
func (t *Tree) group(name string) *Group { return &Group{t: t, name: name, fd: -1} }

func (g *Group) dir(h *hier) string { return filepath.Join(h.dir, g.name) }

// rel is the group's path in h as /proc/<pid>/cgroup shows it.
func (g *Group) rel(h *hier) string { return path.Join(h.rel, g.name) }

// Dirs are the group's directories, one per hierarchy (cgroup2 first).
func (g *Group) Dirs() []string {
	var out []string
	for _, h := range g.t.hiers() {
		out = append(out, g.dir(h))
	}
	return out
}

// Start runs start, which forks the process (exec.Cmd.Start, or
// pty.StartWithAttrs), so that the child is born inside the group: attr,
// the SysProcAttr the fork will use, gets the cgroup2 directory
// (CLONE_INTO_CGROUP), and for v1 hierarchies the OS thread that forks
// enters the group first and leaves it after. No child runs a single
// instruction outside its group, so none can fork its way out of it.
func (g *Group) Start(attr *syscall.SysProcAttr, start func() error) error {
	if g.fd < 0 && len(g.tasks) == 0 {
		return errors.New("cgroups: a group starts one process (its tree's leader)")
	}
	defer g.closeFiles() // needed for this one fork only
	if g.fd >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, g.fd
	}
	if g.t.namespaced {
		// Unshared by the child once it is in its group (in every
		// hierarchy, v1 ones included), so the namespace is rooted there
		// whatever the kernel does with CLONE_NEWCGROUP at clone time.
		attr.Unshareflags |= unix.CLONE_NEWCGROUP
	}
	if len(g.tasks) == 0 {
		return start()
	}
	// A goroutine of its own, locked to its thread: should the thread fail
	// to leave the group, the goroutine ends still locked, and the runtime
	// ends that thread rather than hand it to other goroutines. While the
	// thread is locked the runtime starts new threads from its template
	// thread, not from this one, so none inherits the group.
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		tid := unix.Gettid()
		if err := g.enter(tid); err != nil {
			if g.t.leave(tid) == nil {
				runtime.UnlockOSThread()
			}
			done <- err
			return
		}
		err := start()
		if lerr := g.t.leave(tid); lerr != nil {
			// The child started and is in its group; only this thread is lost.
			done <- err
			return
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// enter moves thread tid into the group's v1 cgroups.
func (g *Group) enter(tid int) error {
	s := []byte(strconv.Itoa(tid))
	for _, f := range g.tasks {
		if _, err := f.Write(s); err != nil {
			return fmt.Errorf("cgroups: enter %s: %w", filepath.Dir(f.Name()), err)
		}
	}
	return nil
}

// leave moves thread tid back into the daemon's own v1 cgroups.
func (t *Tree) leave(tid int) error {
	s := []byte(strconv.Itoa(tid))
	var errs []error
	for _, h := range t.v1 {
		if _, err := h.back.Write(s); err != nil {
			errs = append(errs, fmt.Errorf("cgroups: back to %s: %w", h.back.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Kill kills every process of the group (the whole tree, however it
// forked, setsid included): cgroup.kill on cgroup2, else freeze, kill
// each, thaw, so that nobody forks between the listing and the kill.
func (g *Group) Kill() error {
	g.killed.Store(true)
	switch g.t.kill {
	case killV2:
		err := writeFile(filepath.Join(g.dir(g.t.v2), "cgroup.kill"), "1")
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed: nothing left to kill
		}
		return err
	case killV2Freeze, killV1Freeze:
		_, err := g.frozen(func() (int, error) { return g.signalEach(unix.SIGKILL) })
		return err
	}
	// Without a freezer: kill what is listed, give it a moment to die, and
	// again, until nothing is left; a tree that forks faster than that is
	// bounded by its pids.max. An empty listing is not the end: a child
	// whose fork raced it shows in the next one, so the group must also
	// say it holds no live process (seen in CI: a fork bomb's straggler
	// outlived a Kill that had answered nil).
	deadline := time.Now().Add(killLoopWait)
	for {
		n, err := g.signalEach(unix.SIGKILL)
		if err != nil {
			return err
		}
		if n == 0 {
			if populated, perr := g.Populated(); perr != nil || !populated {
				return perr
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups: %s still has processes after %s of kills", g.name, killLoopWait)
		}
		time.Sleep(settlePoll)
	}
}

// frozen runs do with the group frozen (cgroup2's cgroup.freeze, or v1's
// freezer), so that what do reads of its members holds while it acts:
// nothing forks meanwhile, and a signal do sends is delivered at the
// thaw. Without a freezer do runs as it is. A freeze that does not
// settle within freezeWait (a member in uninterruptible sleep) lets do
// run anyway.
func (g *Group) frozen(do func() (int, error)) (int, error) {
	var file, freeze, thaw string
	var done func() bool
	switch g.t.kill {
	case killV2, killV2Freeze:
		file, freeze, thaw = filepath.Join(g.dir(g.t.v2), "cgroup.freeze"), "1", "0"
		done = func() bool {
			n, _ := parseKeyed(readString(filepath.Join(g.dir(g.t.v2), "cgroup.events")), "frozen")
			return n == 1
		}
	case killV1Freeze:
		file, freeze, thaw = filepath.Join(g.dir(g.t.freezer), "freezer.state"), "FROZEN", "THAWED"
		done = func() bool { return strings.TrimSpace(readString(file)) == "FROZEN" }
	default:
		return do()
	}
	if err := writeFile(file, freeze); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil // removed: nothing left
		}
		return do() // no freezer after all: act on what is listed
	}
	deadline := time.Now().Add(freezeWait)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(settlePoll)
		_ = writeFile(file, freeze) // v1 may need a nudge to finish FREEZING
	}
	n, err := do()
	// The group may be gone by now: its last member exited (one already
	// exiting when the signal came) and the group was removed.
	if terr := writeFile(file, thaw); err == nil && !errors.Is(terr, fs.ErrNotExist) {
		err = terr
	}
	return n, err
}

// Signal sends sig to every process of the group and answers how many it
// reached; ErrEmpty when there was none. SIGKILL goes through Kill.
func (g *Group) Signal(sig syscall.Signal) (int, error) {
	if sig == unix.SIGKILL {
		populated, err := g.Populated()
		if err != nil {
			return 0, err
		}
		if !populated {
			return 0, ErrEmpty
		}
		pids, _ := g.Procs()
		return max(len(pids), 1), g.Kill()
	}
	// Frozen, so that a member forking meanwhile cannot leave a child
	// the listing missed (GNU timeout, signalled between its fork and
	// noting its child's pid, exits and leaves the child running).
	n, err := g.frozen(func() (int, error) { return g.signalEach(sig) })
	if err == nil && n == 0 {
		err = ErrEmpty
	}
	return n, err
}

// signalEach signals every listed member. A pid read from cgroup.procs may
// have exited and been reused by a stranger by the time it is signalled;
// the signal therefore goes through a pidfd, taken before the membership
// is checked once more: if the check passes, the pidfd names a member.
func (g *Group) signalEach(sig syscall.Signal) (int, error) {
	pids, err := g.Procs()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pid := range pids {
		if alive(pid) && g.signalMember(pid, sig) {
			n++
		}
	}
	return n, nil
}

// alive reports whether pid is a process that can still act: a zombie
// (dead, not yet reaped) is listed in its cgroup, and a signal to it
// "succeeds" without effect.
func alive(pid int) bool {
	s := readString("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(s, ')') // comm may hold spaces and parentheses
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func (g *Group) signalMember(pid int, sig syscall.Signal) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) {
			return false // gone
		}
		// Before Linux 5.3: the check and the kill are microseconds apart.
		return g.Holds(pid) && unix.Kill(pid, sig) == nil
	}
	defer unix.Close(fd)
	return g.Holds(pid) && unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// Holds reports whether process pid is in the group (or a cgroup below it).
func (g *Group) Holds(pid int) bool {
	h := g.t.primary()
	p, ok := pathIn(parseProcCgroup(readString("/proc/"+strconv.Itoa(pid)+"/cgroup")), h.ctrl)
	rel := g.rel(h)
	return ok && (p == rel || strings.HasPrefix(p, rel+"/"))
}

// Procs lists the pids of the group's processes, cgroups below it included.
// The daemon itself is never one: a v1 cgroup lists it while one of its
// threads forks a child there (see Start), and nothing must signal it then.
func (g *Group) Procs() ([]int, error) {
	pids, err := listProcs(g.dir(g.t.primary()))
	me := os.Getpid()
	return slices.DeleteFunc(pids, func(pid int) bool { return pid == me }), err
}

func listProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	pids := parsePids(string(b))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			sub, err := listProcs(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			pids = append(pids, sub...)
		}
	}
	return pids, nil
}

// Populated reports whether any process is left in the group.
func (g *Group) Populated() (bool, error) {
	if g.t.v2 != nil {
		b, err := os.ReadFile(filepath.Join(g.dir(g.t.v2), "cgroup.events"))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		n, ok := parseKeyed(string(b), "populated")
		if !ok {
			return false, fmt.Errorf("cgroups: %s/cgroup.events has no populated line", g.dir(g.t.v2))
		}
		return n != 0, nil
	}
	pids, err := g.Procs()
	return len(pids) > 0, err
}

// Remove removes the group's cgroups. It fails while processes are left.
func (g *Group) Remove() error {
	g.closeFiles()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return nil
	}
	var errs []error
	for _, h := range g.t.hiers() {
		if err := removeTree(g.dir(h)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	g.removed = true
	return nil
}
