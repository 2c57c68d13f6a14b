package server_test

import (
	"errors"
	"github.com/trycua/cua-spacesd/spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// assertGroupGone waits until process group pgid has no live member.
// Zombies are dead: in a container whose PID 1 does not reap orphans they
// linger and kill(-pgid, 0) still finds them, so /proc decides then.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := liveGroupMembers(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func liveGroupMembers(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	var live []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pid, _ := strconv.Atoi(filepath.Base(d))
			live = append(live, pid)
		}
	}
	return live
}

func TestTimeoutKillsTreeHTTP(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	info, err := c.Start(t.Context(), api.StartRequest{Command: api.Command{Shell: "sleep 100 & sleep 100", TimeoutMS: 300}})
	if err != nil {
		t.Fatal(err)
	}
	exit := waitExit(t, c, info.ID)
	if !exit.TimedOut || exit.Signal != "KILL" {
		t.Fatalf("exit %+v", exit)
	}
	assertGroupGone(t, info.PID)
}
