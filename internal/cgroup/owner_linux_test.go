//go:build linux

package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A daemon killed with SIGKILL leaves its tree; the next tree opened beside
// it removes it, and nothing else: not a live owner's tree, not another pid
// namespace's (whose owner cannot be asked), not a cgroup that still holds
// a process.
func TestOpenSweepsTheTreesOfDeadOwners(t *testing.T) {
	first := openTree(t, Config{}) // only to learn where trees go here
	parent := filepath.Dir(first.primary().dir)
	ns, err := pidNamespace("self")
	if err != nil {
		t.Fatal(err)
	}
	me, err := owner()
	if err != nil {
		t.Fatal(err)
	}
	// A pid above pid_max is nobody's.
	dead := fmt.Sprintf("%s%d-%d-%d.deadbeef0001", treePrefix, ns, 1<<22+1, 12345)
	// Our pid with another start time: a reused pid.
	reused := fmt.Sprintf("%s%d-%d-%d.deadbeef0002", treePrefix, ns, os.Getpid(), 1)
	live := treePrefix + me + ".deadbeef0003"
	foreign := fmt.Sprintf("%s%d-%d-%d.deadbeef0004", treePrefix, ns+1, 1<<22+1, 12345)
	busy := fmt.Sprintf("%s%d-%d-%d.deadbeef0005", treePrefix, ns, 1<<22+1, 12345)
	for _, name := range []string{dead, reused, live, foreign, busy} {
		for _, sub := range []string{"g1", "g2/g3"} {
			if err := os.MkdirAll(filepath.Join(parent, name, sub), dirMode); err != nil {
				t.Fatalf("plant %s: %v", name, err)
			}
		}
		t.Cleanup(func() { _ = removeTree(filepath.Join(parent, name)) })
	}
	// A process lives on in the busy tree, as a crashed daemon's child would.
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	if err := writeFile(filepath.Join(parent, busy, "g1", "cgroup.procs"), strconv.Itoa(sleep.Process.Pid)); err != nil {
		t.Fatalf("place the process: %v", err)
	}

	openTree(t, Config{})

	for name, want := range map[string]bool{dead: false, reused: false, live: true, foreign: true} {
		if got := exists(filepath.Join(parent, name)); got != want {
			t.Errorf("tree %s: exists=%v, want %v", name, got, want)
		}
	}
	if !exists(filepath.Join(parent, busy, "g1")) {
		t.Error("the cgroup that holds a process was removed")
	}
	if exists(filepath.Join(parent, busy, "g2")) {
		t.Error("the empty cgroups of a dead owner's busy tree stayed")
	}
}

func FuzzParseStartTime(f *testing.F) {
	f.Add("1234 (sleep) S 1 1234 1234 0 -1 4194560 101 0 0 0 0 0 0 0 20 0 1 0 98765 2199552 128 18446744073709551615")
	f.Add("1 (a) b) R 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7 0")
	f.Add("")
	f.Add(")")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseStartTime(s)
	})
}
