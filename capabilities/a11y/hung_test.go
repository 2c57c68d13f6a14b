package a11y_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ytest"
)

// A stopped application answers nothing on the bus: its tree is one node
// with error timeout, in bounded time, and the next tree after it resumes
// is whole again.
func TestHungApplication(t *testing.T) {
	t.Parallel()
	_, app, a := session(t, a11ytest.Options{})
	whole := tree(t, a, app.WindowID)
	if err := syscall.Kill(app.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(app.PID, syscall.SIGCONT)
		}
	}
	defer resume()
	start := time.Now()
	tr, err := a.Tree(t.Context(), api.A11yTreeRequest{WindowID: app.WindowID})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("tree of a stopped application: %v", err)
	}
	if len(tr.Nodes) != 1 || tr.Nodes[0].Error == nil || tr.Nodes[0].Error.Kind != api.KindTimeout {
		t.Errorf("tree of a stopped application: %+v, want one node with error timeout", tr.Nodes)
	}
	if took > 3*time.Second {
		t.Errorf("tree of a stopped application took %v", took)
	}
	t.Logf("tree of a stopped application: %v", took)
	resume()
	again := tree(t, a, app.WindowID)
	if len(again.Nodes) != len(whole.Nodes) {
		t.Errorf("after resuming: %d nodes, want %d", len(again.Nodes), len(whole.Nodes))
	}
}
