package process_test

import (
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/proctest"
)

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
	pgid := proctest.FindProcess(t, marker)
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if !a.res.TimedOut || a.res.Signal != "KILL" {
		t.Fatalf("want timed_out and KILL, got %+v", a.res)
	}
	proctest.AssertGroupGone(t, pgid)
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
	proctest.AssertGroupGone(t, p.PID())
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
		proctest.AssertGroupGone(t, p.PID())
	}
	if _, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"true"}}}); err == nil {
		t.Fatal("start after close succeeded")
	}
}
