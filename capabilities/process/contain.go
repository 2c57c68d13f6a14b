package process

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/trycua/cua-spacesd/internal/cgroup"
	"github.com/trycua/cua-spacesd/internal/procgroup"
	"golang.org/x/sys/unix"
)

// Containment modes of Options.Containment.
const (
	// ContainmentAuto holds each process tree in a cgroup of its own where
	// the daemon can write cgroups, and falls back to process groups.
	ContainmentAuto = "auto"
	// ContainmentOff keeps process groups only.
	ContainmentOff = "off"
)

// maxStrayRounds bounds the looks of a kill for strays that forked while
// it stopped the ones it found.
const maxStrayRounds = 8

// errTreeGone says no process of a tree is left to signal.
var errTreeGone = errors.New("no process of the tree is left")

// group holds one process tree: its cgroup, or (containment off) the
// process group its leader leads.
type group interface {
	// start forks the leader into the group; attr is the SysProcAttr the
	// fork uses, start the call that forks (exec.Cmd.Start, pty.Start...).
	start(attr *syscall.SysProcAttr, start func() error) error
	// lead tells the group its leader, once it runs.
	lead(l *procgroup.Leader)
	// kill kills the whole tree.
	kill() error
	// signal sends sig to every process of the tree; errTreeGone when
	// none is left.
	signal(sig syscall.Signal) error
	// members lists the tree's live pids; nil when they cannot be known.
	members() []int
	// holds reports whether pid belongs to the tree.
	holds(pid int) bool
	// empty reports whether the tree is gone: no process left in the
	// cgroup, or (process groups) the leader reaped.
	empty() bool
	// remove releases the group once empty.
	remove() error
	// dirs are the group's cgroup directories (none for a process group).
	dirs() []string
	// sweep logs, once each, the tree's processes found outside its
	// cgroup, as procs shows them (see cgroup.Group.Strays).
	sweep(procs *cgroup.Procs)
}

// containment makes groups.
type containment interface {
	newGroup(name string) (group, error)
	info() cgroup.Info
	close() error
}

// openContainment opens the cgroup tree asked for, or answers process
// groups and why.
func openContainment(o *Options) (containment, error) {
	if o.Containment == ContainmentOff {
		return processGroups{why: "containment is off (--containment off)"}, nil
	}
	t, err := cgroup.Open(cgroup.Config{
		Group: cgroup.Limits{PidsMax: o.TreePidsMax, MemoryMax: o.TreeMemoryMax},
		All:   cgroup.Limits{PidsMax: o.ChildrenPidsMax, MemoryMax: o.ChildrenMemoryMax},
	})
	if err != nil {
		return processGroups{why: err.Error()}, err
	}
	return cgroupTree{t, o.Logger}, nil
}

// cgroupTree makes a cgroup per tree.
type cgroupTree struct {
	t   *cgroup.Tree
	log *slog.Logger
}

func (c cgroupTree) newGroup(id string) (group, error) {
	g, err := c.t.Take() // made ahead, off the start's path
	if err != nil {
		return nil, err
	}
	return &cgroupGroup{t: c.t, g: g, id: id, log: c.log}, nil
}

func (c cgroupTree) info() cgroup.Info { return c.t.Info() }
func (c cgroupTree) close() error      { return c.t.Close() }

// cgroupGroup is a tree's cgroup. A root process of the tree can leave
// it (v1 hierarchies, cgroup2 without nsdelegate): signals and kills of
// the tree reach such strays too, and the sweep logs them.
type cgroupGroup struct {
	t   *cgroup.Tree
	g   *cgroup.Group
	id  string // the process's
	log *slog.Logger
	// leader is set once the leader runs (nil before).
	leader atomic.Pointer[procgroup.Leader]

	mu sync.Mutex
	// reported are the strays logged already, by pid and command name:
	// each is logged once, and again when it runs another program.
	reported map[strayKey]bool
}

type strayKey struct {
	pid  int
	comm string
}

func (c *cgroupGroup) start(attr *syscall.SysProcAttr, start func() error) error {
	return c.g.Start(attr, start)
}
func (c *cgroupGroup) lead(l *procgroup.Leader) { c.leader.Store(l) }

func (c *cgroupGroup) kill() error {
	_, err := c.killWithStrays()
	return err
}

func (c *cgroupGroup) signal(sig syscall.Signal) error {
	var (
		n   int
		err error
	)
	if sig == syscall.SIGKILL {
		n, err = c.killWithStrays()
	} else {
		_, err = c.g.Signal(sig)
		n = c.signalStrays(sig)
	}
	if errors.Is(err, cgroup.ErrEmpty) {
		if n > 0 {
			return nil
		}
		return errTreeGone
	}
	return err
}

// killWithStrays kills the group and its strays, and answers how many
// strays it reached; cgroup.ErrEmpty when the group held no process. The
// strays are stopped first, where they are: once the group's members die,
// a stray's link to the tree (its parent) may go with them.
func (c *cgroupGroup) killWithStrays() (int, error) {
	held := c.holdStrays()
	_, err := c.g.Signal(syscall.SIGKILL) // through the cgroup: Kill
	for _, s := range held {
		s.Signal(syscall.SIGKILL)
	}
	return len(held), err
}

// holdStrays stops the strays the group's own kill misses, and looks
// again until no new one shows (one may fork between a look and its
// stop; its child is then found through it), at most maxStrayRounds times.
func (c *cgroupGroup) holdStrays() []cgroup.Stray {
	var held []cgroup.Stray
	seen := map[int]bool{}
	for range maxStrayRounds {
		fresh := 0
		for _, s := range c.strays(nil) {
			c.report(s)
			if s.Unlisted && !seen[s.PID] && s.Signal(syscall.SIGSTOP) {
				seen[s.PID] = true
				held = append(held, s)
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	return held
}

// strays finds the tree's processes outside its cgroup (procs nil: a
// fresh look), with the leader pinned while it may not have been reaped
// (see cgroup.Group.Strays).
func (c *cgroupGroup) strays(procs *cgroup.Procs) []cgroup.Stray {
	var out []cgroup.Stray
	if l := c.leader.Load(); l == nil || !l.Pinned(func(pid int) { out = c.g.Strays(procs, pid) }) {
		out = c.g.Strays(procs, 0)
	}
	return out
}

// signalStrays sends sig to the strays the cgroup's own signal misses,
// logging every stray not logged yet, and answers how many it reached.
func (c *cgroupGroup) signalStrays(sig syscall.Signal) int {
	n := 0
	for _, s := range c.strays(nil) {
		c.report(s)
		if s.Unlisted && s.Signal(sig) {
			n++
		}
	}
	return n
}

func (c *cgroupGroup) sweep(procs *cgroup.Procs) {
	for _, s := range c.strays(procs) {
		c.report(s)
	}
}

// report logs a stray the first time it is seen.
func (c *cgroupGroup) report(s cgroup.Stray) {
	k := strayKey{s.PID, s.Comm}
	c.mu.Lock()
	seen := c.reported[k]
	if !seen {
		if c.reported == nil {
			c.reported = map[strayKey]bool{}
		}
		c.reported[k] = true
	}
	c.mu.Unlock()
	if !seen {
		c.log.Warn("a process left its tree's cgroup: the tree's limits no longer hold it; its tree's signals and kill still reach it",
			"id", c.id, "pid", s.PID, "comm", s.Comm, "left", strings.Join(s.Left, ","), "now_in", s.Cgroup)
	}
}

func (c *cgroupGroup) members() []int {
	pids, _ := c.g.Procs()
	return pids
}
func (c *cgroupGroup) holds(pid int) bool { return c.g.Holds(pid) }
func (c *cgroupGroup) empty() bool {
	populated, err := c.g.Populated()
	return err == nil && !populated
}

// remove hands the empty group to the tree, which removes it in the
// background: rmdir is not on the answer's path.
func (c *cgroupGroup) remove() error {
	c.t.Release(c.g)
	return nil
}
func (c *cgroupGroup) dirs() []string { return c.g.Dirs() }

// processGroups is containment off: a tree is its leader's process group,
// which setsid and GNU timeout leave, and which cannot be signalled any
// more once its leader is reaped (its id may be someone else's by then).
type processGroups struct{ why string }

func (p processGroups) newGroup(string) (group, error) { return &processGroup{}, nil }
func (p processGroups) info() cgroup.Info              { return cgroup.Info{Mode: cgroup.ModeOff, Note: p.why} }
func (processGroups) close() error                     { return nil }

type processGroup struct{ l *procgroup.Leader }

func (p *processGroup) start(attr *syscall.SysProcAttr, start func() error) error {
	if !attr.Setsid {
		attr.Setpgid = true
	}
	return start()
}
func (p *processGroup) lead(l *procgroup.Leader) { p.l = l }
func (p *processGroup) kill() error {
	if err := p.l.Signal(syscall.SIGKILL, true); err != nil && !gone(err) {
		return err
	}
	return nil
}
func (p *processGroup) signal(sig syscall.Signal) error {
	err := p.l.Signal(sig, true)
	if gone(err) {
		return errTreeGone
	}
	return err
}
func (p *processGroup) members() []int { return nil }
func (p *processGroup) holds(pid int) bool {
	g, err := unix.Getpgid(pid)
	return err == nil && g == p.l.PID() && !p.l.Reaped()
}
func (p *processGroup) empty() bool         { return p.l.Reaped() }
func (p *processGroup) remove() error       { return nil }
func (p *processGroup) dirs() []string      { return nil }
func (p *processGroup) sweep(*cgroup.Procs) {}

// gone reports whether a signal found no process to reach.
func gone(err error) bool {
	return errors.Is(err, syscall.ESRCH) || errors.Is(err, procgroup.ErrReaped)
}

// descendants are the members of a tree other than its leader.
func descendants(members []int, leader int) []int {
	var out []int
	for _, pid := range members {
		if pid != leader && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid runs: a zombie (an exited child its parent has
// not reaped yet) is listed in its cgroup but is no longer a process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may hold spaces and parentheses
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
