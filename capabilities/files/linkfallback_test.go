package files_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// childEnv tells the test binary it runs as the child of
// TestWriteLinksWithoutProc, in a mount namespace of its own.
const childEnv = "CUA_FILES_TEST_NO_PROC_DIR"

// An unnamed file is linked into place through /proc/self/fd; without
// /proc (a bare container), through AT_EMPTY_PATH, which needs
// CAP_DAC_READ_SEARCH in the first user namespace; without either (root of
// a user namespace), by copying it into a named temp file. Each way is run
// for real in a child with /proc hidden: a write must land and leave
// nothing else, and a no-overwrite one (an upload's commit) too.
func TestWriteLinksWithoutProc(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		writeWithoutProc(t, dir)
		return
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		msg := "needs root on Linux to make mount namespaces"
		testenv.Missing(t, "%s", msg)
	}
	for _, tc := range []struct {
		name  string
		attrs *syscall.SysProcAttr
	}{
		// A mount namespace of its own, /proc hidden: AT_EMPTY_PATH.
		{"AT_EMPTY_PATH", &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}},
		// Also a user namespace: no capability in the first one, so a copy.
		{"copy", &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "f"), "old")
			cmd := exec.Command(os.Args[0], "-test.run=^TestWriteLinksWithoutProc$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			cmd.SysProcAttr = tc.attrs
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS") {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if got := strings.Join(entries(t, dir), " "); got != "f g" {
				t.Errorf("left %q; want f g", got)
			}
			for name, want := range map[string]string{"f": "new f", "g": "new g"} {
				if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
					t.Errorf("%s holds %q; want %q", name, b, want)
				}
			}
		})
	}
}

// writeWithoutProc runs in the child: it hides /proc, in a mount
// namespace made private first so that nothing reaches the host's.
func writeWithoutProc(t *testing.T, dir string) {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make the mounts private: %v", err)
	}
	if err := syscall.Mount("none", "/proc", "tmpfs", 0, ""); err != nil {
		t.Fatalf("hide /proc: %v", err)
	}
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		t.Fatal("/proc is still there")
	}
	if _, err := files.WriteAtomic(filepath.Join(dir, "f"), strings.NewReader("new f"), files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := files.WriteAtomic(filepath.Join(dir, "g"), strings.NewReader("new g"), files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}
