// Package cgroup holds each process tree the daemon starts in a cgroup of
// its own: created before the process is born, entered at birth (so not
// even a fork bomb's first children get out), bounded by pids.max and
// memory.max, and killed whole through the cgroup rather than through a
// process group that setsid or GNU timeout leave.
//
// The daemon's groups live in a subtree of its own (a Tree) under the
// cgroup it runs in, in every hierarchy it can write:
//
//   - cgroup2 (the unified hierarchy), pure or beside v1 controllers: the
//     child is born in its group (clone3 CLONE_INTO_CGROUP), the tree dies
//     by cgroup.kill (or freeze, kill, thaw on kernels before 5.14), and
//     pids and memory are bounded where the hierarchy has those controllers;
//   - cgroup v1 pids, memory and freezer (hybrid and legacy hosts), which
//     have no CLONE_INTO_CGROUP: the starting OS thread enters the group's
//     v1 cgroups, forks (the child inherits them), and goes back. Without
//     cgroup2, a tree dies by freezer: freeze, kill each member, thaw.
//
// Where nothing is writable, Open fails and says why; the caller then keeps
// process groups (see capabilities/process).
package cgroup

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Mode says which cgroup hierarchies hold the daemon's process trees.
type Mode string

const (
	// ModeV2 uses the unified hierarchy (cgroup2) only.
	ModeV2 Mode = "cgroup2"
	// ModeHybrid uses cgroup2 and v1 controllers together.
	ModeHybrid Mode = "hybrid"
	// ModeV1 uses v1 controllers only.
	ModeV1 Mode = "cgroup1"
	// ModeOff holds nothing: processes stay in process groups.
	ModeOff Mode = "off"
)

// Limits bound one group, or all groups of a tree together. Zero means
// not enforced (no such controller, or none asked for).
type Limits struct {
	// PidsMax bounds tasks (processes and threads): pids.max.
	PidsMax int64
	// MemoryMax bounds memory in bytes: memory.max (memory.limit_in_bytes on v1).
	MemoryMax int64
}

// Info describes a tree: how it holds groups and the limits in force.
type Info struct {
	Mode Mode
	// Note says what is missing (a controller, a permission) in one
	// sentence a person can act on; empty when everything works.
	Note string
	// Group are the limits of each group, All those of every group together.
	Group, All Limits
	// Namespaced says each tree runs in a cgroup namespace rooted at its
	// group, which the kernel enforces (cgroup2 mounted with nsdelegate):
	// no process of it, root or not, can move to a cgroup2 group outside
	// its own. v1 hierarchies know no such bound (see Group.Strays).
	Namespaced bool
}

// Config configures a Tree. A zero limit takes its default (see
// DefaultLimits); a negative one is not enforced.
type Config struct {
	Group, All Limits
	// avoid leaves parts unused, so that tests reach the paths of hosts
	// that lack them.
	avoid avoid
}

type avoid struct{ v2, v2Kill, freezer bool }

// Defaults (see DefaultLimits).
const (
	// DefaultGroupPidsMax bounds the tasks of one process tree: room for a
	// browser or a parallel build, not for a fork bomb to starve the Space.
	DefaultGroupPidsMax = 4096
	// allPidsPercent is the share of the kernel's task limit (the smaller
	// of pid_max and threads-max) all trees together may hold; the rest is
	// the daemon's and the Space's own.
	allPidsPercent = 75
	// minMemoryReserve and memoryReserveDivisor keep RAM out of every
	// tree's reach: the larger of 512 MiB and an eighth of RAM, at most half.
	minMemoryReserve     = 512 << 20
	memoryReserveDivisor = 8
)

// memoryReserve is the RAM (bytes) no tree may take, of ram in all.
func memoryReserve(ram int64) int64 {
	return min(max(minMemoryReserve, ram/memoryReserveDivisor), ram/2)
}

// parseMemTotal reads MemTotal from /proc/meminfo ("MemTotal: 24683776 kB")
// in bytes; 0 when it is not there.
func parseMemTotal(s string) int64 {
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "MemTotal" {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 || n > (1<<63-1)>>10 {
			return 0
		}
		return n << 10
	}
	return 0
}

// Stray is a process of a group's tree found outside the group in a
// hierarchy the tree uses.
type Stray struct {
	PID  int
	Comm string
	// Left names the hierarchies it left ("cgroup2", "pids", ...), Cgroup
	// where it is now in the first of them.
	Left   []string
	Cgroup string
	// Unlisted says it left the hierarchy the group lists its members
	// from, and so the group's own Signal and Kill miss it.
	Unlisted bool
	// start is its start time: a kill never reaches a process that took
	// its pid since (see Kill).
	start uint64
}

// ErrEmpty says a group holds no process any more.
var ErrEmpty = errors.New("the cgroup holds no process")

// Hierarchy names used in /proc/<pid>/cgroup and mountinfo.
const (
	fsCgroup2 = "cgroup2"
	fsCgroup1 = "cgroup"

	ctrlPids    = "pids"
	ctrlMemory  = "memory"
	ctrlFreezer = "freezer"
)

// mount is one cgroup filesystem mount from /proc/self/mountinfo.
type mount struct {
	// root is the cgroup the mount shows at its mount point ("/" unless
	// the mount was made inside a container without a cgroup namespace).
	root  string
	point string
	v2    bool
	// nsdelegate says cgroup2 treats cgroup namespaces as delegation
	// boundaries: a process in one may not move itself (or another) to a
	// cgroup outside its namespace's root, root or not.
	nsdelegate bool
	// ctrls are the v1 controllers the mount carries.
	ctrls []string
}

func (m mount) has(ctrl string) bool {
	for _, c := range m.ctrls {
		if c == ctrl {
			return true
		}
	}
	return false
}

// isMountOption reports whether a super option of a v1 cgroup mount is an
// option rather than a controller.
func isMountOption(o string) bool {
	switch o {
	case "", "rw", "ro", "xattr", "noprefix", "clone_children", "cpuset_v2_mode", "favordynmods", "nofavordynmods", "sane_behavior":
		return true
	}
	return strings.Contains(o, "=")
}

// maxMountInfoLines bounds what parseMountInfo reads: a host with more
// mounts than this is not one we run on.
const maxMountInfoLines = 100_000

// parseMountInfo finds the cgroup mounts in /proc/self/mountinfo:
//
//	36 25 0:31 / /sys/fs/cgroup/pids rw,relatime shared:13 - cgroup cgroup rw,pids
//
// (fields: id, parent, dev, root, mount point, options, optional fields,
// "-", fstype, source, super options). Malformed lines are skipped.
func parseMountInfo(s string) []mount {
	var out []mount
	for i, line := range strings.Split(s, "\n") {
		if i >= maxMountInfoLines {
			break
		}
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		g := strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := mount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case fsCgroup2:
			m.v2 = true
			if len(g) >= 3 {
				m.nsdelegate = slices.Contains(strings.Split(g[2], ","), "nsdelegate")
			}
		case fsCgroup1:
			if len(g) < 3 {
				continue
			}
			for _, o := range strings.Split(g[2], ",") {
				if !isMountOption(o) {
					m.ctrls = append(m.ctrls, o)
				}
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// membership is one line of /proc/<pid>/cgroup: "hierarchy-id:controllers:path".
type membership struct {
	v2    bool // "0::/path"
	ctrls []string
	path  string
}

// maxProcCgroupLines bounds what parseProcCgroup reads (a kernel has a
// few dozen hierarchies at most).
const maxProcCgroupLines = 1000

// parseProcCgroup parses /proc/<pid>/cgroup. Malformed lines are skipped.
func parseProcCgroup(s string) []membership {
	var out []membership
	for i, line := range strings.Split(s, "\n") {
		if i >= maxProcCgroupLines {
			break
		}
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(path, "/") {
			continue
		}
		m := membership{path: path}
		if id == "0" && ctrls == "" {
			m.v2 = true
		} else {
			for _, c := range strings.Split(ctrls, ",") {
				if c != "" && !strings.Contains(c, "=") {
					m.ctrls = append(m.ctrls, c)
				}
			}
			if len(m.ctrls) == 0 {
				continue // a named hierarchy (name=systemd): no controller of ours
			}
		}
		out = append(out, m)
	}
	return out
}

// pathIn answers the path of the hierarchy that carries ctrl ("" for the
// unified one) in a parsed /proc/<pid>/cgroup.
func pathIn(ms []membership, ctrl string) (string, bool) {
	for _, m := range ms {
		if ctrl == "" && m.v2 {
			return m.path, true
		}
		if ctrl != "" && !m.v2 {
			for _, c := range m.ctrls {
				if c == ctrl {
					return m.path, true
				}
			}
		}
	}
	return "", false
}

// procStat is what Strays reads of one /proc/<pid>/stat.
type procStat struct {
	comm                string
	state               byte
	ppid, pgrp, session int
	flags               uint64
	start               uint64
}

// pfExiting is the kernel's PF_EXITING in /proc/<pid>/stat's flags: the
// process is dying, and v1 hierarchies may already show it in their root.
const pfExiting = 0x4

// live reports whether the process can still act: not dying, not a zombie.
func (ps procStat) live() bool { return ps.state != 'Z' && ps.state != 'X' && ps.flags&pfExiting == 0 }

// parseProcStat reads a /proc/<pid>/stat line. The command name (field 2)
// may hold spaces and parentheses, so the fields are counted after its
// last ')'.
func parseProcStat(s string) (procStat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state), f[1] ppid, f[2] pgrp, f[3] session, f[6]
	// the flags (field 9), f[19] the start time (field 22).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	var ps procStat
	ps.comm, ps.state = s[open+1:end], f[0][0]
	var err1, err2, err3, err4, err5 error
	ps.ppid, err1 = strconv.Atoi(f[1])
	ps.pgrp, err2 = strconv.Atoi(f[2])
	ps.session, err3 = strconv.Atoi(f[3])
	ps.flags, err4 = strconv.ParseUint(f[6], 10, 64)
	ps.start, err5 = strconv.ParseUint(f[19], 10, 64)
	return ps, errors.Join(err1, err2, err3, err4, err5) == nil
}

// capSysAdmin is CAP_SYS_ADMIN's bit in /proc/<pid>/status CapEff.
const capSysAdmin = 21

// hasCapSysAdmin reports whether a /proc/self/status says the process may
// make namespaces (CAP_SYS_ADMIN in its effective set).
func hasCapSysAdmin(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<capSysAdmin) != 0
		}
	}
	return false
}

// parseKeyed reads a flat keyed file (cgroup.events: "populated 1\nfrozen 0").
func parseKeyed(s, key string) (int64, bool) {
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// parsePids reads cgroup.procs: one pid a line.
func parsePids(s string) []int {
	var out []int
	for _, f := range strings.Fields(s) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// sizeSuffixes are the binary multiples ParseSize knows.
var sizeSuffixes = []struct {
	suffix string
	shift  uint
}{{"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}}

// ParseSize reads a byte count for a flag: a plain number of bytes, or one
// with a binary suffix K, M, G or T (optionally followed by "i" or "iB",
// any case): "512M", "4GiB". "max" and "none" answer -1 (not enforced).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "":
		return 0, fmt.Errorf("size %q: empty", s)
	case "max", "none":
		return -1, nil
	}
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(u, "B")
	u = strings.TrimSuffix(u, "I")
	shift := uint(0)
	for _, sf := range sizeSuffixes {
		if strings.HasSuffix(u, sf.suffix) {
			u, shift = strings.TrimSuffix(u, sf.suffix), sf.shift
			break
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want bytes, or a number with K, M, G or T (e.g. 512M), or max", s)
	}
	if n > (1<<63-1)>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n << shift, nil
}

// kernelAtLeast reports whether a uname release ("6.18.44-fc-v669",
// "5.4.0-150-generic") is at least major.minor. An unreadable one is not.
func kernelAtLeast(release string, major, minor int) bool {
	f := strings.SplitN(release, ".", 3)
	if len(f) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(f[0])
	end := 0
	for end < len(f[1]) && f[1][end] >= '0' && f[1][end] <= '9' {
		end++
	}
	min, err2 := strconv.Atoi(f[1][:end])
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || (maj == major && min >= minor)
}
