// Package proctest answers, from Linux's /proc, the questions tests ask about the
// processes they started: is this group gone, which pid runs this command.
// Zombies count as dead: where PID 1 does not reap orphans (containers)
// they linger, and kill(pid, 0) would still find them.
package proctest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitLimit bounds every wait here; a test that hits it fails.
const waitLimit = 30 * time.Second

// stat returns the fields of /proc/PID/stat after "(comm)": state, ppid, pgrp, ...
func stat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	// comm may hold spaces and parentheses: cut at the last ')'.
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), true
}

func pids() []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]int, 0, len(dirs))
	for _, d := range dirs {
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Alive reports whether pid runs (exists and is not a zombie).
func Alive(pid int) bool {
	f, ok := stat(pid)
	return ok && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// LiveGroupMembers lists the live pids of process group pgid.
func LiveGroupMembers(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	var live []int
	for _, pid := range pids() {
		f, ok := stat(pid)
		if !ok || len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			live = append(live, pid)
		}
	}
	return live
}

// AssertGroupGone waits for group pgid to have no live member.
func AssertGroupGone(t testing.TB, pgid int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		live := LiveGroupMembers(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Live lists the live pids whose command line holds marker.
func Live(marker string) []int {
	var out []int
	for _, pid := range pids() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) && Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// FindProcess waits until a process whose command line holds marker runs,
// and returns its pid.
func FindProcess(t testing.TB, marker string) int {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		for _, pid := range pids() {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if err == nil && strings.Contains(string(b), marker) {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process with %q in its command line", marker)
	return 0
}
