//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/internal/testenv"
)

// waitLimit bounds every wait of these tests; a test that hits it fails.
const waitLimit = 30 * time.Second

// variants are the host shapes a tree can take here: this hybrid host as
// it is, and the v1-only, pre-5.14 cgroup2 and no-freezer paths reached by
// leaving parts unused.
var variants = []struct {
	name  string
	avoid avoid
	kill  killMethod
}{
	{"hybrid", avoid{}, killV2},
	{"v2 freeze", avoid{v2Kill: true}, killV2Freeze},
	{"v1 only", avoid{v2: true}, killV1Freeze},
	{"v1 without freezer", avoid{v2: true, freezer: true}, killLoop},
}

// openTree opens a tree, or skips the test where cgroups are not writable
// (and fails under CI, whose machines have them).
func openTree(t *testing.T, cfg Config) *Tree {
	t.Helper()
	tr, err := Open(cfg)
	if err != nil {
		testenv.Missing(t, "cgroups are not writable here: %v", err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("close tree: %v", err)
		}
		for _, h := range tr.hiers() {
			if exists(h.dir) {
				t.Errorf("tree %s left behind", h.dir)
			}
		}
	})
	return tr
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", waitLimit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start starts sh -c script in g, reaping it in the background.
func start(t *testing.T, g *Group, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.Start(cmd.SysProcAttr, cmd.Start); err != nil {
		t.Fatalf("start in group: %v", err)
	}
	go func() { _ = cmd.Wait() }()
	return cmd
}

func livePids(pids []int) []int {
	var out []int
	for _, p := range pids {
		if alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// TestTreeHoldsWhatLeavesTheProcessGroup: setsid and GNU timeout take their
// children out of the process group, never out of the cgroup; one Kill
// ends them all, and the group can then be removed.
func TestTreeHoldsWhatLeavesTheProcessGroup(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			tr := openTree(t, Config{avoid: v.avoid})
			if tr.kill != v.kill {
				t.Fatalf("kill method %d, want %d (info %+v)", tr.kill, v.kill, tr.Info())
			}
			g, err := tr.New("p1")
			if err != nil {
				t.Fatal(err)
			}
			cmd := start(t, g, "setsid sleep 100 & timeout 100 sleep 100 & sleep 100")
			var pids []int
			eventually(t, "the shell and its 4 descendants", func() bool {
				pids, _ = g.Procs()
				return len(pids) >= 5 // sh, setsid's sleep, timeout, its sleep, sleep
			})
			for _, pid := range pids {
				if !g.Holds(pid) {
					t.Errorf("pid %d is listed but not held", pid)
				}
			}
			if !g.Holds(cmd.Process.Pid) {
				t.Errorf("the leader %d is not in its group", cmd.Process.Pid)
			}
			if err := g.Kill(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the group to empty", func() bool { p, _ := g.Populated(); return !p })
			if live := livePids(pids); len(live) > 0 {
				t.Fatalf("still alive after kill: %v", live)
			}
			if err := g.Remove(); err != nil {
				t.Fatal(err)
			}
			for _, d := range g.Dirs() {
				if exists(d) {
					t.Errorf("%s left after Remove", d)
				}
			}
			if _, err := g.Signal(syscall.SIGTERM); !errors.Is(err, ErrEmpty) {
				t.Errorf("signal to a removed group: %v, want ErrEmpty", err)
			}
		})
	}
}

// TestSignalReachesEveryMember: a TERM reaches the setsid grandchild too.
func TestSignalReachesEveryMember(t *testing.T) {
	tr := openTree(t, Config{})
	g, err := tr.New("p1")
	if err != nil {
		t.Fatal(err)
	}
	start(t, g, "setsid sleep 100 & sleep 100")
	var pids []int
	eventually(t, "3 members", func() bool { pids, _ = g.Procs(); return len(pids) >= 3 })
	n, err := g.Signal(syscall.SIGTERM)
	if err != nil || n < 3 {
		t.Fatalf("signal TERM: reached %d, %v", n, err)
	}
	eventually(t, "the group to empty", func() bool { p, _ := g.Populated(); return !p })
	if _, err := g.Signal(syscall.SIGTERM); !errors.Is(err, ErrEmpty) {
		t.Fatalf("signal to an empty group: %v, want ErrEmpty", err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
}

// pidsFile is the pids controller's file of g, and memoryFile its memory
// limit's, whichever hierarchy carries them.
func pidsFile(t *testing.T, g *Group, name string) string {
	t.Helper()
	switch {
	case g.t.v2Pids:
		return filepath.Join(g.dir(g.t.v2), name)
	case g.t.pids != nil:
		return filepath.Join(g.dir(g.t.pids), name)
	}
	t.Fatal("no pids controller")
	return ""
}

func readInt(t *testing.T, file string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(readString(file)), 10, 64)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return n
}

// bombLimit is the pids.max of the fork bomb's group.
const bombLimit = 32

// TestPidsMaxBoundsAForkBomb runs a fork bomb, only ever inside a group
// whose pids.max is already in place: the test checks the limit before it
// starts the bomb, and the bomb itself refuses to fork unless its own
// cgroup carries that limit. The bomb stays at the limit and dies whole.
func TestPidsMaxBoundsAForkBomb(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			tr := openTree(t, Config{Group: Limits{PidsMax: bombLimit}, All: Limits{PidsMax: 4 * bombLimit}, avoid: v.avoid})
			g, err := tr.New("bomb")
			if err != nil {
				t.Fatal(err)
			}
			maxFile := pidsFile(t, g, "pids.max")
			if got := readInt(t, maxFile); got != bombLimit {
				t.Fatalf("refusing to start the fork bomb: %s is %d, want %d", maxFile, got, bombLimit)
			}
			// The bomb checks its own cgroup before it forks: exit 99 otherwise.
			script := fmt.Sprintf(`[ "$(cat %s)" = %d ] && grep -q '%s' /proc/self/cgroup || exit 99
b(){ b|b& }; b; exec sleep 600`, maxFile, bombLimit, memberLine(g))
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := g.Start(cmd.SysProcAttr, cmd.Start); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			peakFile := pidsFile(t, g, "pids.peak")
			// dash gives up when a fork of its own is refused, so the first
			// shell may well end once its children hit the limit: only the
			// guard's exit 99 (it never forked) fails the test.
			shellDone := false
			eventually(t, "the bomb to reach its limit", func() bool {
				if !shellDone {
					select {
					case err := <-exited:
						shellDone = true
						var ee *exec.ExitError
						if errors.As(err, &ee) && ee.ExitCode() == 99 {
							t.Fatalf("the bomb refused to start outside its limited group: %v", err)
						}
					default:
					}
				}
				return readInt(t, peakFile) >= bombLimit
			})
			if peak := readInt(t, peakFile); peak > bombLimit {
				t.Fatalf("pids.peak %d is over pids.max %d", peak, bombLimit)
			}
			if err := g.Kill(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the bomb to die whole", func() bool { p, _ := g.Populated(); return !p })
			if !shellDone {
				<-exited
			}
			if err := g.Remove(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// memberLine is a line of /proc/self/cgroup that only a member of g has.
func memberLine(g *Group) string {
	h := g.t.primary()
	if h.ctrl == "" {
		return "^0::" + g.rel(h) + "$"
	}
	return ":" + h.ctrl + ":" + g.rel(h) + "$"
}

// TestMemoryMaxBoundsAHog: a process that grows without end (tail of a
// file with no newline) is killed by the group's memory limit, checked in
// place before it starts.
func TestMemoryMaxBoundsAHog(t *testing.T) {
	if swap := readString("/proc/swaps"); strings.Count(swap, "\n") > 1 {
		t.Skip("this host swaps: a memory limit would swap the hog out rather than kill it")
	}
	const limit = 32 << 20
	tr := openTree(t, Config{Group: Limits{PidsMax: 16, MemoryMax: limit}})
	var file string
	switch {
	case tr.v2Memory:
		file = "memory.max"
	case tr.memory != nil:
		file = "memory.limit_in_bytes"
	default:
		t.Fatalf("no memory controller: %s", tr.Info().Note)
	}
	g, err := tr.New("hog")
	if err != nil {
		t.Fatal(err)
	}
	dir := g.dir(tr.memory)
	if tr.v2Memory {
		dir = g.dir(tr.v2)
	}
	if got := readInt(t, filepath.Join(dir, file)); got != limit {
		t.Fatalf("refusing to start the hog: %s is %d, want %d", file, got, limit)
	}
	cmd := exec.Command("tail", "/dev/zero")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.Start(cmd.SysProcAttr, cmd.Start); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the hog ended with %v, want killed by the memory limit", err)
	}
	eventually(t, "the group to empty", func() bool { p, _ := g.Populated(); return !p })
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseKillsWhatIsLeft: closing the tree kills and removes every
// group still in it.
func TestCloseKillsWhatIsLeft(t *testing.T) {
	tr, err := Open(Config{})
	if err != nil {
		testenv.Missing(t, "cgroups are not writable here: %v", err)
	}
	var pids []int
	for _, name := range []string{"a", "b"} {
		g, err := tr.New(name)
		if err != nil {
			t.Fatal(err)
		}
		start(t, g, "setsid sleep 100 & sleep 100")
		eventually(t, "3 members", func() bool { p, _ := g.Procs(); return len(p) >= 3 })
		p, _ := g.Procs()
		pids = append(pids, p...)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if live := livePids(pids); len(live) > 0 {
		t.Fatalf("alive after Close: %v", live)
	}
	for _, h := range tr.hiers() {
		if exists(h.dir) {
			t.Errorf("%s left after Close", h.dir)
		}
	}
	if _, err := tr.New("c"); err == nil {
		t.Fatal("New after Close succeeded")
	}
}

func TestNewRefusesBadNames(t *testing.T) {
	tr := openTree(t, Config{})
	for _, name := range []string{"", ".", "..", "a/b", "x\x00", leafName} {
		if _, err := tr.New(name); err == nil {
			t.Errorf("New(%q) succeeded", name)
		}
	}
}

func TestDefaultLimitsLeaveRoom(t *testing.T) {
	group, all := DefaultLimits()
	if group.PidsMax <= 0 || group.PidsMax > DefaultGroupPidsMax || all.PidsMax < group.PidsMax {
		t.Errorf("pids: group %d, all %d", group.PidsMax, all.PidsMax)
	}
	ram := parseMemTotal(readString("/proc/meminfo"))
	if all.MemoryMax <= 0 || all.MemoryMax >= ram || group.MemoryMax > all.MemoryMax {
		t.Errorf("memory: group %d, all %d, RAM %d", group.MemoryMax, all.MemoryMax, ram)
	}
}

// TestPoolRecyclesOrRemoves: Take answers a group with its limits in
// place (made ahead); Release recycles it when nothing of its last tree is
// left in it, and removes it otherwise: a cgroup below it, memory still
// charged, a zombie still holding a pid, or a kill it received (Linux
// kills what is later born into a cgroup once killed; see

// A namespaced tree's child runs in a cgroup namespace rooted at its
// group, in every hierarchy: it sees its group as "/". (Whether the kernel
// then refuses a move out of it depends on nsdelegate, which this test
// does not set: the host's mount is not the test's to change.)
func TestNamespacedTreeRootsItsChildren(t *testing.T) {
	if !hasCapSysAdmin(readString("/proc/self/status")) {
		testenv.Missing(t, "needs CAP_SYS_ADMIN, to make cgroup namespaces")
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			tr := openTree(t, Config{avoid: v.avoid})
			tr.namespaced = true // as Open sets it where cgroup2 has nsdelegate
			g, err := tr.New("g")
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "cgroup")
			cmd := start(t, g, "cat /proc/self/cgroup >"+out)
			eventually(t, "the child to write its cgroups", func() bool { return !alive(cmd.Process.Pid) && readString(out) != "" })
			ms := parseProcCgroup(readString(out))
			for _, h := range tr.hiers() {
				if p, ok := pathIn(ms, h.ctrl); !ok || p != "/" {
					t.Errorf("in %s the child sees its cgroup as %q, want / (its namespace's root)", h.name(), p)
				}
			}
		})
	}
}
