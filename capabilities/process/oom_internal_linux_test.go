package process

import (
	"os"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

// TestChildrenDoNotInheritOOMBias: the systemd unit shields the daemon
// from the OOM killer (OOMScoreAdjust=-900); its children must not inherit
// the shield, or the kernel short of memory would spare the work that ate
// the memory as it spares the daemon. Lowering a bias below zero needs a
// privilege tests may lack, so the test gives itself a positive bias
// instead, which children inherit the same way, and checks that a manager
// that resets children's biases (as it does when its own is negative)
// brings them back to 0.
func TestChildrenDoNotInheritOOMBias(t *testing.T) {
	const file = "/proc/self/" + oomScoreFile
	was, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("100"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(file, was, 0) })
	m := NewManager(Options{})
	t.Cleanup(m.Close)
	for _, tc := range []struct {
		reset bool
		want  string
	}{{false, "100"}, {true, "0"}} {
		m.resetOOM = tc.reset
		// The shell reads its bias only once told to, after Start returned.
		p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "read go; cat " + file}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteStdin(t.Context(), strings.NewReader("go\n"), true); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		buf := make([]byte, 64)
		c := p.stdout.ReadAt(buf, 0)
		if got := strings.TrimSpace(string(buf[:c.N])); got != tc.want {
			t.Errorf("a child's OOM bias with reset=%v: %q; want %s", tc.reset, got, tc.want)
		}
	}
}
