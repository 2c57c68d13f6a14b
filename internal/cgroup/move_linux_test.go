package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// moveHelperEnv makes the test binary, started inside a scratch cgroup2
// cgroup, act as a daemon that moves itself into a leaf (see
// TestMoveSelfIntoLeaf); its value is that cgroup's directory.
const moveHelperEnv = "CUA_CGROUP_MOVE_HELPER"

func TestMain(m *testing.M) {
	if base := os.Getenv(moveHelperEnv); base != "" {
		os.Exit(moveHelper(base))
	}
	goleak.VerifyTestMain(m)
}

// moveHelper is the daemon of TestMoveSelfIntoLeaf: it starts a child (as
// --xvfb starts Xvfb), moves itself into a leaf of base, and checks that
// both are in it.
func moveHelper(base string) int {
	child := exec.Command("sleep", "1000")
	if err := child.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	err := moveSelfInto(base, filepath.Join(base, leafName))
	fmt.Printf("moved: %v\n", err)
	if err != nil {
		return 0
	}
	for _, pid := range []int{os.Getpid(), child.Process.Pid} {
		if !strings.Contains(readString("/proc/"+strconv.Itoa(pid)+"/cgroup"), "/"+leafName+"\n") {
			fmt.Printf("pid %d is not in the leaf\n", pid)
			return 1
		}
	}
	return 0
}

// TestMoveSelfIntoLeaf: a daemon whose cgroup must hand controllers down
// moves itself, and the children it started, into a leaf; it refuses when
// a process it did not start shares its cgroup.
func TestMoveSelfIntoLeaf(t *testing.T) {
	var v2 *mount
	for _, m := range parseMountInfo(readString("/proc/self/mountinfo")) {
		if m.v2 {
			v2 = &m
			break
		}
	}
	own, ok := pathIn(parseProcCgroup(readString("/proc/thread-self/cgroup")), "")
	if v2 == nil || !ok {
		t.Skip("no cgroup2 here")
	}
	h := &hier{mnt: *v2}
	for _, tc := range []struct {
		name     string
		stranger bool
		want     string
	}{{"alone", false, "moved: <nil>"}, {"shared", true, "moved: other processes"}} {
		t.Run(tc.name, func(t *testing.T) {
			base := h.dirOf(path.Join(own, "cua-spacesd-move-test."+randomHex(4)))
			if err := os.Mkdir(base, dirMode); err != nil {
				testenv.Missing(t, "cgroups are not writable here: %v", err)
			}
			t.Cleanup(func() {
				_ = removeTree(base)
			})
			fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			startIn := func(cmd *exec.Cmd) {
				cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.stranger {
				s := exec.Command("sleep", "1000")
				startIn(s)
				t.Cleanup(func() { _ = s.Process.Kill(); _ = s.Wait() })
			}
			helper := exec.Command(os.Args[0])
			helper.Env = append(os.Environ(), moveHelperEnv+"="+base)
			var out strings.Builder
			helper.Stdout, helper.Stderr = &out, &out
			startIn(helper)
			if err := helper.Wait(); err != nil || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("helper: %v\n%s\nwant %q", err, out.String(), tc.want)
			}
		})
	}
}
