package procgroup_test

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/internal/procgroup"
)

func TestSignalsStopAtReap(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 0.05")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := procgroup.New(cmd.Process.Pid)
	if err := l.Signal(0, true); err != nil {
		t.Fatalf("signal 0 to a live group: %v", err)
	}
	if err := l.Reap(cmd.Wait); err != nil {
		t.Fatal(err)
	}
	if err := l.Signal(syscall.SIGKILL, true); !errors.Is(err, procgroup.ErrReaped) {
		t.Fatalf("signal after reap = %v, want ErrReaped", err)
	}
}

func TestKillsTheWholeGroup(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & sleep 100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := procgroup.New(cmd.Process.Pid)
	if err := l.Signal(syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Reap(cmd.Wait); err == nil {
		t.Fatal("killed leader reported success")
	}
}

func TestRefusesPidOneAndZero(t *testing.T) {
	for _, pid := range []int{0, 1, -1} {
		if err := procgroup.New(pid).Signal(0, true); err == nil {
			t.Errorf("signal to pid %d accepted", pid)
		}
	}
}

// WhileRunning runs its function (which may signal through the leader)
// while the leader runs, and not once the leader may have been reaped.
func TestWhileRunning(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 0.05")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := procgroup.New(cmd.Process.Pid)
	var err error
	if !l.WhileRunning(func() { err = l.Signal(0, true) }) || err != nil {
		t.Fatalf("while running: ran=false or signal %v", err)
	}
	if err := l.Reap(cmd.Wait); err != nil {
		t.Fatal(err)
	}
	if l.WhileRunning(func() { t.Error("ran after the reap") }) || !l.Reaped() {
		t.Fatal("WhileRunning ran after the reap")
	}
}
