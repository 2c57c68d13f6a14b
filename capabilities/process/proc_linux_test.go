package process_test

import (
	"errors"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/api"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// findProcess waits until a process whose command line holds marker runs,
// and returns its pid.
func findProcess(t *testing.T, marker string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			b, err := os.ReadFile(d + "/cmdline")
			if err == nil && strings.Contains(string(b), marker) {
				pid, _ := strconv.Atoi(filepath.Base(d))
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process with %q in its command line", marker)
	return 0
}

// liveMembers lists the pids of group pgid that are alive. Zombies are
// dead: in a container whose PID 1 does not reap orphans they linger, and
// kill(-pgid, 0) would still find them, so /proc decides.
func liveMembers(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	var live []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so cut at the last ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pid, _ := strconv.Atoi(filepath.Base(d))
			live = append(live, pid)
		}
	}
	return live
}

// assertGroupGone waits for group pgid to have no live member.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := liveMembers(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExecTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	// The marker lets the test find the group's members in /proc.
	marker := "exec-tree-marker-1"
	type answer struct {
		res *api.ExecResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{
			Shell: "sleep 100 & sleep 100; : " + marker, TimeoutMS: 1500}})
		done <- answer{res, err}
	}()
	// The shell's pid is its group's id: find it while it runs.
	pgid := findProcess(t, marker)
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if !a.res.TimedOut || a.res.Signal != "KILL" {
		t.Fatalf("want timed_out and KILL, got %+v", a.res)
	}
	assertGroupGone(t, pgid)
}

func TestStartTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "sleep 100 & sleep 100", TimeoutMS: 300}})
	if err != nil {
		t.Fatal(err)
	}
	info := waitDone(t, p)
	if !info.TimedOut || info.Signal != "KILL" {
		t.Fatalf("info %+v", info)
	}
	assertGroupGone(t, p.PID())
}

func TestCloseKillsEveryGroup(t *testing.T) {
	t.Parallel()
	m := process.NewManager(process.Options{})
	var ps []*process.Process
	for range 3 {
		p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "sleep 100 & sleep 100"}})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	m.Close()
	for _, p := range ps {
		waitDone(t, p)
		assertGroupGone(t, p.PID())
	}
	if _, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"true"}}}); err == nil {
		t.Fatal("start after close succeeded")
	}
}
