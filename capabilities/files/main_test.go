package files_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"go.uber.org/goleak"
)

// Every watcher, janitor and copy goroutine must be gone when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// smallTmpfs mounts a tmpfs of size bytes for the test. Without the rights
// to mount, the test skips, but fails in CI (CI=true), which runs as root.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := "cannot mount a tmpfs (" + strings.TrimSpace(string(out)) + "): " + err.Error()
		testenv.Missing(t, "%s", msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// entries lists the names in dir, for "nothing was left behind" checks.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
