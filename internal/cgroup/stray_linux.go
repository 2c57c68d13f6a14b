//go:build linux

package cgroup

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A root process may write its pid into any cgroup's cgroup.procs: in
// every v1 hierarchy, and in cgroup2 unless it is mounted with nsdelegate
// and the process is in a cgroup namespace (see Tree.namespaced). Such a
// process, and what it starts after, is out of its group's limits and out
// of its kill. Strays finds them by what the kernel cannot hide from the
// daemon: their parent, and the process group and session the tree's
// leader made.

// Procs is a look at every process (not thread) in /proc, which the
// Strays of many groups can share.
type Procs struct{ stat map[int]procStat }

// ReadProcs reads the stat of every process in /proc.
func ReadProcs() *Procs {
	entries, _ := os.ReadDir("/proc")
	out := make(map[int]procStat, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if ps, ok := parseProcStat(readString("/proc/" + e.Name() + "/stat")); ok {
			out[pid] = ps
		}
	}
	return &Procs{out}
}

// Strays lists the processes of the group's tree that are outside the
// group in some hierarchy the tree uses, as procs (nil: a fresh look)
// shows them. The tree is the group's members, the leader (its pid; 0
// once it may have been reaped), every process in the leader's process
// group or session, and every descendant of those.
//
// A caller that passes the leader must keep it unreaped meanwhile: its
// pid, and the process group and session named after it, are then ours
// (the kernel hands out no pid still in use as a process group or session
// id). Without the leader, a process that left the group and whose parent
// is gone is not found: nothing then ties it to the tree.
func (g *Group) Strays(all *Procs, leader int) []Stray {
	if all == nil {
		all = ReadProcs()
	}
	procs := all.stat
	me := os.Getpid()
	tree := map[int]bool{}
	var queue []int
	add := func(pid int) {
		if ps, ok := procs[pid]; ok && pid != me && pid > 1 && !tree[pid] && ps.live() {
			tree[pid] = true
			queue = append(queue, pid)
		}
	}
	members, _ := g.Procs()
	for _, pid := range members {
		add(pid)
	}
	if leader > 1 {
		add(leader)
		for pid, ps := range procs {
			if ps.pgrp == leader || ps.session == leader {
				add(pid)
			}
		}
	}
	children := map[int][]int{}
	for pid, ps := range procs {
		children[ps.ppid] = append(children[ps.ppid], pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			add(c)
		}
	}
	var out []Stray
	for pid := range tree {
		ms := parseProcCgroup(readString("/proc/" + strconv.Itoa(pid) + "/cgroup"))
		// Looked at again after its cgroups: one that began to die
		// meanwhile (killed with its group) may show v1 roots.
		ps, ok := parseProcStat(readString("/proc/" + strconv.Itoa(pid) + "/stat"))
		if len(ms) == 0 || !ok || !ps.live() || ps.start != procs[pid].start {
			continue
		}
		s := Stray{PID: pid, Comm: procs[pid].comm, start: procs[pid].start}
		for i, h := range g.t.hiers() {
			p, ok := pathIn(ms, h.ctrl)
			rel := g.rel(h)
			if ok && p != rel && !strings.HasPrefix(p, rel+"/") {
				if len(s.Left) == 0 {
					s.Cgroup = p
				}
				s.Left = append(s.Left, h.name())
				s.Unlisted = s.Unlisted || i == 0 // hiers()[0] is primary()
			}
		}
		if len(s.Left) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// name names a hierarchy as Stray.Left does.
func (h *hier) name() string {
	if h.ctrl == "" {
		return fsCgroup2
	}
	return h.ctrl
}

// Signal sends sig to the stray, unless its pid names another process by
// now; it answers whether it did. The signal goes through a pidfd taken
// before the start time is checked again: if the check passes, the pidfd
// names the stray.
func (s Stray) Signal(sig syscall.Signal) bool {
	fd, err := unix.PidfdOpen(s.PID, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) {
			return false // gone
		}
		// Before Linux 5.3: the check and the kill are microseconds apart.
		return s.same() && unix.Kill(s.PID, sig) == nil
	}
	defer unix.Close(fd)
	return s.same() && unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// same reports whether s.PID still names the process Strays saw.
func (s Stray) same() bool {
	ps, ok := parseProcStat(readString("/proc/" + strconv.Itoa(s.PID) + "/stat"))
	return ok && ps.start == s.start
}
