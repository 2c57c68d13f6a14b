package nstest_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/nstest"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

func TestMain(m *testing.M) {
	nstest.Main("internal/nstest")
	os.Exit(m.Run())
}

// Inside its namespaces a test sees only lo, and X sockets of its own: an
// empty tmpfs at /tmp/.X11-unix that no other run shares.
func TestIsolated(t *testing.T) {
	if !nstest.Inside() {
		testenv.Missing(t, "the tests run outside their namespaces (not root?): nothing to check")
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifs) != 1 || ifs[0].Flags&net.FlagLoopback == 0 || ifs[0].Flags&net.FlagUp == 0 {
		t.Fatalf("interfaces inside: %+v, want lo alone and up", ifs)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == "/tmp/.X11-unix" && strings.Contains(line, " - tmpfs ") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no tmpfs of the tests' own at /tmp/.X11-unix:\n%s", mounts)
	}
	entries, err := os.ReadDir("/tmp/.X11-unix")
	if err != nil || len(entries) != 0 {
		t.Fatalf("/tmp/.X11-unix inside holds %v (%v), want nothing", entries, err)
	}
	// lo goes down and up again, and only in here.
	if err := nstest.SetLoopback(false); err != nil {
		t.Fatal(err)
	}
	if err := nstest.SetLoopback(true); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("loopback after bringing lo up again: %v", err)
	}
	ln.Close()
}
