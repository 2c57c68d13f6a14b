//go:build linux

package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A tree is named after its owner, the daemon process that made it:
// treePrefix + "<pid namespace>-<pid>-<start time>." + a random suffix. A
// daemon killed with SIGKILL cannot remove its tree, and nothing else
// knows it is gone; the next daemon that opens a tree beside it does
// (sweepStale), by asking whether that process still lives.

// owner names the calling process as a tree's owner: its pid namespace's
// inode, its pid there, and its start time (clock ticks since boot), so
// that a reused pid is not taken for the owner.
func owner() (string, error) {
	ns, err := pidNamespace("self")
	if err != nil {
		return "", err
	}
	pid := os.Getpid()
	start, err := startTime(strconv.Itoa(pid))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d-%d-%d", ns, pid, start), nil
}

// pidNamespace is the inode of the pid namespace of /proc/<pid>.
func pidNamespace(pid string) (uint64, error) {
	l, err := os.Readlink(filepath.Join("/proc", pid, "ns", "pid"))
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(l, "pid:[")
	if !ok || !strings.HasSuffix(s, "]") {
		return 0, fmt.Errorf("pid namespace %q", l)
	}
	return strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64)
}

// startTime is field 22 of /proc/<pid>/stat: when the process started.
func startTime(pid string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, err
	}
	return parseStartTime(string(b))
}

// parseStartTime reads the start time of a /proc/<pid>/stat line.
func parseStartTime(stat string) (uint64, error) {
	ps, ok := parseProcStat(stat)
	if !ok {
		return 0, fmt.Errorf("a stat line that cannot be read: %.80q", stat)
	}
	return ps.start, nil
}

// staleOwner reports whether a tree named name (under treePrefix) belongs
// to a process that is gone. Names it cannot read, and owners in another
// pid namespace (whose pids it cannot ask about), are never stale.
func staleOwner(name string, ns uint64) bool {
	rest, ok := strings.CutPrefix(name, treePrefix)
	if !ok {
		return false
	}
	id, _, ok := strings.Cut(rest, ".")
	parts := strings.Split(id, "-")
	if !ok || len(parts) != 3 {
		return false
	}
	var n [3]uint64
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return false
		}
		n[i] = v
	}
	if n[0] != ns {
		return false
	}
	start, err := startTime(strconv.FormatUint(n[1], 10))
	return err != nil || start != n[2]
}

// sweepStale removes, beside the tree, the trees of owners that are gone.
// Only empty cgroups go: rmdir refuses a cgroup that still holds a
// process, so a crashed daemon's processes that live on keep theirs.
func (t *Tree) sweepStale() {
	ns, err := pidNamespace("self")
	if err != nil {
		return
	}
	for _, h := range t.hiers() {
		parent := filepath.Dir(h.dir)
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != t.name && staleOwner(e.Name(), ns) {
				_ = removeTree(filepath.Join(parent, e.Name()))
			}
		}
	}
}
