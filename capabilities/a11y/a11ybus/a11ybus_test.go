package a11ybus_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/a11y"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ybus"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// Start starts a session bus in its directory and the accessibility bus
// on it, whose registry a11y reaches through the session bus; Close
// stops them all.
func TestStartAndClose(t *testing.T) {
	if err := a11ybus.Available(); err != nil {
		testenv.Missing(t, "%v (the accessibility tests need it)", err)
	}
	// A short directory: a socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "a11ybus")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := a11ybus.Start(t.Context(), dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if want := "unix:path=" + filepath.Join(dir, "bus"); b.SessionAddr != want {
		t.Errorf("SessionAddr = %q, want %q", b.SessionAddr, want)
	}
	if !strings.HasPrefix(b.A11yAddr, "unix:") {
		t.Errorf("A11yAddr = %q", b.A11yAddr)
	}
	a := a11y.New(a11y.Options{SessionBusAddress: b.SessionAddr})
	defer a.Close()
	if st := a.Status(t.Context()); !st.Supported {
		t.Errorf("a11y over the started bus: %+v\n%s", st, b.Log())
	}
	pids := b.PIDs()
	if len(pids) != 2 {
		t.Fatalf("PIDs = %v", pids)
	}
	a.Close()
	b.Close()
	for _, pid := range pids {
		// The groups are gone: their leaders and what they started.
		if err := syscall.Kill(-pid, 0); err == nil {
			t.Errorf("process group %d outlived Close", pid)
		}
	}
}

// Start with a directory whose socket path cannot be a unix socket's
// fails, and starts nothing.
func TestStartRefusesALongPath(t *testing.T) {
	if err := a11ybus.Available(); err != nil {
		testenv.Missing(t, "%v (the accessibility tests need it)", err)
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if _, err := a11ybus.Start(t.Context(), dir, "", nil); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("Start in %s: %v", dir, err)
	}
}
