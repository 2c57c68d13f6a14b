package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

// A daemon started with descriptors past stderr (a pipe of its parent, a
// file) does not pass them to the processes it starts: a child sees 0, 1
// and 2 only. The token comes from the environment, so the daemon also
// re-executes itself with its token pipe, which must still work.
func TestChildrenInheritNoDescriptors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/fd is Linux's")
	}
	bin := buildDaemon(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	marker, err := os.Create(filepath.Join(t.TempDir(), "inherited-marker"))
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()

	const tok = "cloexec-token-5b8e21"
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--display", "", "--media-port", "0", "--state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), tokenEnv+"="+tok, "DISPLAY=")
	cmd.ExtraFiles = []*os.File{w, marker} // the daemon's 3 and 4, not close-on-exec
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, logged := listenAddrOf(t, stderr)
	if strings.Contains(logged, "stays readable") || strings.Contains(logged, "inherited descriptors stay open") {
		t.Fatalf("the daemon warned:\n%s", logged)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"ls", "-l", "/proc/self/fd"}}})
	if err != nil {
		t.Fatalf("exec with the environment's token: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[len(fields)-2] != "->" {
			continue // "total 0"
		}
		fd, target := fields[len(fields)-3], fields[len(fields)-1]
		switch {
		case fd == "0" || fd == "1" || fd == "2":
		case strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd"):
			// ls's own listing of the directory.
		default:
			t.Errorf("the child holds descriptor %s -> %s", fd, target)
		}
	}
	if t.Failed() {
		t.Logf("ls -l /proc/self/fd in the child:\n%s", res.Stdout)
	}
}

// Where close_range(2) is missing, walking the descriptors marks each one
// close-on-exec all the same (the kernel here has close_range, so the walk
// is called directly).
func TestWalkOnExec(t *testing.T) {
	fds := make([]int, 3)
	for i := range fds {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY, 0) // without O_CLOEXEC, as inherited
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	if err := walkOnExec(fds[0]); err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("descriptor %d: flags %#x, %v; want FD_CLOEXEC", fd, flags, err)
		}
	}
}
