//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// treePrefix starts the name of every tree; its owner and a random
	// suffix follow (owner_linux.go), so that daemons (and tests) sharing
	// a cgroup never share a tree, and a dead owner's tree can be told.
	treePrefix = "cua-spacesd."
	// leafName is where the daemon moves itself under cgroup2 when its own
	// cgroup must hand controllers down (no process may sit in a cgroup
	// that does: the no-internal-process rule). A daemon already in a
	// cgroup of that name makes its trees beside itself, not below.
	leafName = "daemon"
	dirMode  = 0o755
	// cloneIntoCgroupMajor/Minor is the first kernel with clone3
	// CLONE_INTO_CGROUP, which places a child in its cgroup at birth.
	cloneIntoCgroupMajor, cloneIntoCgroupMinor = 5, 7
	// closeWait bounds how long Close waits for killed groups to empty.
	closeWait = 5 * time.Second
)

// killMethod is how a tree's groups die.
type killMethod int

const (
	killV2       killMethod = iota // cgroup2 cgroup.kill (5.14+)
	killV2Freeze                   // cgroup2 cgroup.freeze, kill each, thaw (5.2+)
	killV1Freeze                   // v1 freezer.state FROZEN, kill each, THAWED
	killLoop                       // list and kill until empty (bounded by pids.max)
)

// hier is one hierarchy a tree uses.
type hier struct {
	// ctrl is the v1 controller this hierarchy serves ("" for cgroup2).
	ctrl string
	mnt  mount
	// rel is the tree's path as /proc/<pid>/cgroup shows it, dir its directory.
	rel, dir string
	// back is the tasks file of the daemon's own v1 cgroup, kept open to
	// move the starting thread back after a start (nil on cgroup2).
	back *os.File
}

// dirOf is the directory of the cgroup rel (as /proc/<pid>/cgroup names it).
func (h *hier) dirOf(rel string) string {
	r := rel
	if h.mnt.root != "/" {
		r = strings.TrimPrefix(rel, h.mnt.root)
	}
	return filepath.Join(h.mnt.point, filepath.FromSlash(r))
}

// Tree is the daemon's subtree of cgroups: one group per process tree.
type Tree struct {
	name string
	info Info
	kill killMethod

	v2 *hier
	// v2Pids and v2Memory say the groups' pids and memory are bounded in cgroup2.
	v2Pids, v2Memory bool
	// namespaced gives each process tree a cgroup namespace rooted at its
	// group (Info.Namespaced).
	namespaced bool
	// v1 are the distinct v1 hierarchies used; pids, memory and freezer
	// point among them (nil when that controller is not used on v1).
	v1                    []*hier
	pids, memory, freezer *hier

	pool *pool

	mu     sync.Mutex
	closed bool
}

// Open makes a tree under the daemon's own cgroups, in every hierarchy it
// can write. It fails, saying why, when no hierarchy can hold a group;
// what partly works is in Info().Note.
func Open(cfg Config) (*Tree, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: read mountinfo: %w", err)
	}
	// This thread's cgroups, not the process's: /proc/self/cgroup shows the
	// main thread's, and the main thread may be, for a moment, in a group
	// it is starting a child into (see Group.Start). This thread is not.
	pc, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroups: read /proc/thread-self/cgroup: %w", err)
	}
	defGroup, defAll := DefaultLimits()
	ownerID, err := owner()
	if err != nil {
		return nil, fmt.Errorf("cgroups: who owns the tree: %w", err)
	}
	t := &Tree{name: treePrefix + ownerID + "." + randomHex(6)}
	t.info.Group = resolveLimits(cfg.Group, defGroup)
	t.info.All = resolveLimits(cfg.All, defAll)
	mounts := parseMountInfo(string(mi))
	own := parseProcCgroup(string(pc))

	// Why a part is not used matters only when something ends up missing:
	// a v1 host with pids, memory and freezer lacks nothing.
	var notes []string
	v2Err := errors.New("cgroup2 is not used")
	if !cfg.avoid.v2 {
		v2Err = t.openV2(mounts, own)
	}
	var pidsErr, memErr error
	if t.v2 == nil || !t.v2Pids {
		pidsErr = t.openV1(mounts, own, ctrlPids, &t.pids)
	}
	if t.v2 == nil || !t.v2Memory {
		memErr = t.openV1(mounts, own, ctrlMemory, &t.memory)
	}
	switch {
	case t.v2 != nil && t.v2Kill() && !cfg.avoid.v2Kill:
		t.kill = killV2
	case t.v2 != nil && t.v2Freeze():
		t.kill = killV2Freeze
	default:
		if cfg.avoid.freezer {
			t.kill = killLoop
		} else if err := t.openV1(mounts, own, ctrlFreezer, &t.freezer); err == nil {
			t.kill = killV1Freeze
		} else {
			t.kill = killLoop
		}
	}
	if t.v2 == nil && len(t.v1) == 0 {
		return nil, fmt.Errorf("no cgroup is writable: %v; %v", v2Err, pidsErr)
	}
	// A cgroup namespace bounds where a process may move itself only where
	// cgroup2 is mounted with nsdelegate: elsewhere (seen on Linux 6.18)
	// root in one moves itself anywhere, so it would add nothing. Making
	// one needs CAP_SYS_ADMIN, which a daemon without it does not have
	// (its children then cannot write other users' cgroups either).
	t.namespaced = t.v2 != nil && t.v2.mnt.nsdelegate && hasCapSysAdmin(readString("/proc/self/status"))
	t.info.Namespaced = t.namespaced
	if err := t.applyTreeLimits(); err != nil {
		t.closeFiles()
		_ = t.removeDirs()
		return nil, err
	}
	if v2Err != nil {
		notes = append(notes, v2Err.Error())
	}
	if !t.v2Pids && t.pids == nil && t.info.All.PidsMax+t.info.Group.PidsMax > 0 {
		t.info.Group.PidsMax, t.info.All.PidsMax = 0, 0
		notes = append(notes, fmt.Sprintf("the number of processes is not bounded (%v)", pidsErr))
	}
	if !t.v2Memory && t.memory == nil && t.info.All.MemoryMax+t.info.Group.MemoryMax > 0 {
		t.info.Group.MemoryMax, t.info.All.MemoryMax = 0, 0
		notes = append(notes, fmt.Sprintf("memory is not bounded (%v)", memErr))
	}
	if t.kill == killLoop {
		notes = append(notes, "no cgroup.kill or freezer: a tree is killed by listing its processes until none is left")
	}
	switch {
	case t.v2 != nil && len(t.v1) > 0:
		t.info.Mode = ModeHybrid
	case t.v2 != nil:
		t.info.Mode = ModeV2
	default:
		t.info.Mode = ModeV1
	}
	// A v2 error next to a working v1 host is no news.
	if len(notes) > 1 || (len(notes) == 1 && v2Err == nil) {
		t.info.Note = strings.Join(notes, "; ")
	}
	t.sweepStale()
	t.startPool()
	return t, nil
}

// Info says how the tree holds groups and which limits are in force.
func (t *Tree) Info() Info { return t.info }

func (t *Tree) v2Kill() bool   { return exists(filepath.Join(t.v2.dir, "cgroup.kill")) }
func (t *Tree) v2Freeze() bool { return exists(filepath.Join(t.v2.dir, "cgroup.freeze")) }

// openV2 makes the tree in the unified hierarchy and hands it the pids and
// memory controllers where the daemon's cgroup has them to give.
func (t *Tree) openV2(mounts []mount, own []membership) error {
	var m *mount
	for i := range mounts {
		if mounts[i].v2 {
			m = &mounts[i]
			break
		}
	}
	ownRel, ok := pathIn(own, "")
	if m == nil || !ok {
		return errors.New("no cgroup2 hierarchy is mounted")
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil || !kernelAtLeast(unix.ByteSliceToString(uts.Release[:]), cloneIntoCgroupMajor, cloneIntoCgroupMinor) {
		return fmt.Errorf("cgroup2 is not used: this kernel cannot start a process into a cgroup (clone3 CLONE_INTO_CGROUP needs Linux %d.%d)",
			cloneIntoCgroupMajor, cloneIntoCgroupMinor)
	}
	baseRel := ownRel
	if path.Base(ownRel) == leafName {
		baseRel = path.Dir(ownRel)
	}
	h := &hier{mnt: *m, rel: path.Join(baseRel, t.name)}
	h.dir = h.dirOf(h.rel)
	base := h.dirOf(baseRel)
	if err := os.Mkdir(h.dir, dirMode); err != nil {
		return fmt.Errorf("cannot create cgroups under %s (%v): run as root, or under systemd with Delegate=yes", base, errors.Unwrap(err))
	}
	t.v2 = h
	var want []string
	avail := strings.Fields(readString(filepath.Join(base, "cgroup.controllers")))
	for _, c := range []string{ctrlPids, ctrlMemory} {
		if contains(avail, c) && (c != ctrlPids || t.info.Group.PidsMax+t.info.All.PidsMax > 0) &&
			(c != ctrlMemory || t.info.Group.MemoryMax+t.info.All.MemoryMax > 0) {
			want = append(want, c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	err := enableControllers(base, want)
	if errors.Is(err, unix.EBUSY) && baseRel != "/" {
		// Our own cgroup holds processes (us), so it may not hand
		// controllers down: move into a leaf of it and try again.
		if merr := moveSelfInto(base, filepath.Join(base, leafName)); merr != nil {
			return fmt.Errorf("cgroup2 controllers %s are not used: %v", strings.Join(want, ", "), merr)
		}
		err = enableControllers(base, want)
	}
	if err == nil {
		err = enableControllers(h.dir, want)
	}
	if err != nil {
		return fmt.Errorf("cgroup2 controllers %s are not used: %v", strings.Join(want, ", "), err)
	}
	t.v2Pids, t.v2Memory = contains(want, ctrlPids), contains(want, ctrlMemory)
	return nil
}

// enableControllers hands ctrls down from dir to its children.
func enableControllers(dir string, ctrls []string) error {
	s := "+" + strings.Join(ctrls, " +")
	if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), s); err != nil {
		return fmt.Errorf("enable %s in %s: %w", s, dir, err)
	}
	return nil
}

// moveSelfInto moves the daemon (and the children it started before, such
// as its own Xvfb) from base into leaf, unless other processes share base:
// moving them is not the daemon's business, and with them in it base could
// not hand controllers down anyway.
func moveSelfInto(base, leaf string) error {
	me := os.Getpid()
	pids := parsePids(readString(filepath.Join(base, "cgroup.procs")))
	for _, pid := range pids {
		if pid != me && parentOf(pid) != me {
			return fmt.Errorf("other processes (pid %d) share the daemon's cgroup %s; give the daemon a cgroup of its own (systemd: Delegate=yes)", pid, base)
		}
	}
	if err := os.Mkdir(leaf, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", leaf, err)
	}
	for _, pid := range pids {
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(pid)); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("move pid %d into %s: %w", pid, leaf, err)
		}
	}
	return nil
}

// parentOf is the parent pid of pid (0 when it cannot be read).
func parentOf(pid int) int {
	s := readString("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// openV1 makes the tree in the v1 hierarchy of ctrl and points *slot at it.
func (t *Tree) openV1(mounts []mount, own []membership, ctrl string, slot **hier) error {
	var m *mount
	for i := range mounts {
		if !mounts[i].v2 && mounts[i].has(ctrl) {
			m = &mounts[i]
			break
		}
	}
	ownRel, ok := pathIn(own, ctrl)
	if m == nil || !ok {
		return fmt.Errorf("no %s controller is mounted", ctrl)
	}
	for _, h := range t.v1 {
		if h.mnt.point == m.point { // controllers mounted together
			*slot = h
			return nil
		}
	}
	h := &hier{ctrl: ctrl, mnt: *m, rel: path.Join(ownRel, t.name)}
	h.dir = h.dirOf(h.rel)
	if err := os.Mkdir(h.dir, dirMode); err != nil {
		return fmt.Errorf("cannot create %s cgroups under %s (%v): run as root", ctrl, h.dirOf(ownRel), errors.Unwrap(err))
	}
	back, err := os.OpenFile(filepath.Join(h.dirOf(ownRel), "tasks"), os.O_WRONLY, 0)
	if err != nil {
		_ = os.Remove(h.dir)
		return fmt.Errorf("cannot use %s cgroups: open the daemon's own tasks file: %w", ctrl, err)
	}
	h.back = back
	if ctrl == ctrlMemory {
		// Old kernels make v1 memory limits hierarchical only on request;
		// new ones always are and refuse the write, which is fine.
		_ = writeFile(filepath.Join(h.dir, "memory.use_hierarchy"), "1")
	}
	t.v1 = append(t.v1, h)
	*slot = h
	return nil
}

// applyTreeLimits bounds all groups together.
func (t *Tree) applyTreeLimits() error {
	return t.applyLimits(t.info.All, func(h *hier) string { return h.dir })
}

// applyLimits writes lim into the directory dirOf names in each hierarchy
// that bounds pids or memory.
func (t *Tree) applyLimits(lim Limits, dirOf func(*hier) string) error {
	type write struct {
		h    *hier
		file string
		v    int64
	}
	var ws []write
	if lim.PidsMax > 0 {
		if t.v2Pids {
			ws = append(ws, write{t.v2, "pids.max", lim.PidsMax})
		} else if t.pids != nil {
			ws = append(ws, write{t.pids, "pids.max", lim.PidsMax})
		}
	}
	if lim.MemoryMax > 0 {
		if t.v2Memory {
			ws = append(ws, write{t.v2, "memory.max", lim.MemoryMax})
		} else if t.memory != nil {
			ws = append(ws, write{t.memory, "memory.limit_in_bytes", lim.MemoryMax})
		}
	}
	for _, w := range ws {
		p := filepath.Join(dirOf(w.h), w.file)
		if err := writeFile(p, strconv.FormatInt(w.v, 10)); err != nil {
			return fmt.Errorf("cgroups: set %s: %w", p, err)
		}
	}
	return nil
}

// pidsHier is the hierarchy that bounds the groups' pids (nil if none).
func (t *Tree) pidsHier() *hier {
	if t.v2Pids {
		return t.v2
	}
	return t.pids
}

// memoryUsage is the hierarchy that bounds the groups' memory and the file
// that says how much is charged (nil if none).
func (t *Tree) memoryUsage() (*hier, string) {
	switch {
	case t.v2Memory:
		return t.v2, "memory.current"
	case t.memory != nil:
		return t.memory, "memory.usage_in_bytes"
	}
	return nil, ""
}

// hiers lists every hierarchy the tree uses, cgroup2 first.
func (t *Tree) hiers() []*hier {
	out := make([]*hier, 0, 1+len(t.v1))
	if t.v2 != nil {
		out = append(out, t.v2)
	}
	return append(out, t.v1...)
}

// primary is the hierarchy a group's members are listed from.
func (t *Tree) primary() *hier { return t.hiers()[0] }

// Close kills every group still in the tree, waits (a bounded while) for
// them to empty, and removes the tree. The daemon's own move into a leaf,
// if it made one, stays.
func (t *Tree) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.stopPool()
	var groups []*Group
	entries, _ := os.ReadDir(t.primary().dir)
	for _, e := range entries {
		if e.IsDir() {
			groups = append(groups, t.group(e.Name()))
		}
	}
	for _, g := range groups {
		_ = g.Kill()
	}
	deadline := time.Now().Add(closeWait)
	var errs []error
	for _, g := range groups {
		for populated, _ := g.Populated(); populated && time.Now().Before(deadline); populated, _ = g.Populated() {
			time.Sleep(settlePoll)
		}
		if err := g.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, t.removeDirs())
	t.closeFiles()
	return errors.Join(errs...)
}

func (t *Tree) closeFiles() {
	for _, h := range t.v1 {
		_ = h.back.Close()
	}
}

func (t *Tree) removeDirs() error {
	var errs []error
	for _, h := range t.hiers() {
		if err := removeTree(h.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
