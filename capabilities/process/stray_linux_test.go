package process_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/proctest"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"golang.org/x/sys/unix"
)

const (
	// strayLog is the message the manager logs a stray with.
	strayLog = "a process left its tree's cgroup"
	// movesDone is what the test's shell says once it tried its moves.
	movesDone = "moves-done"
)

// TestRootChildThatLeavesItsCgroup: a root child that writes its own pid
// into a cgroup outside its tree (in every hierarchy the tree uses), then
// runs `setsid sleep`, is still its tree's. Where the tree's cgroup
// namespace binds (cgroup2 mounted nsdelegate) the kernel refuses the
// cgroup2 move; wherever a move went through, the daemon logs the stray
// (its sweep, or the kill), and the tree's timeout or KILL kills it. Seen
// before: it escaped the timeout, untracked, and the exec answered only
// when its sleep ended.
func TestRootChildThatLeavesItsCgroup(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "needs root: only root writes other cgroups")
	}
	for _, tc := range []struct {
		name string
		// run starts shell and ends it the way the case names; marker is
		// the sleep's, logs the manager's log.
		run func(t *testing.T, m *process.Manager, shell, marker string, logs *testenv.SyncBuffer) (stderr string)
	}{
		{"exec timeout", func(t *testing.T, m *process.Manager, shell, marker string, _ *testenv.SyncBuffer) string {
			type result struct {
				res *api.ExecResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{Shell: shell, TimeoutMS: 1500}})
				done <- result{res, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute):
				t.Errorf("the exec did not answer after its timeout: its stray holds it")
				killMarked(marker) // so that the exec answers
				r = <-done
			}
			if r.err != nil || !r.res.TimedOut {
				t.Errorf("exec: %+v, %v; want timed out", r.res, r.err)
			}
			if r.res == nil {
				return ""
			}
			return r.res.Stderr
		}},
		{"swept, then KILL", func(t *testing.T, m *process.Manager, shell, marker string, logs *testenv.SyncBuffer) string {
			p, err := m.Start(api.StartRequest{Command: api.Command{Shell: shell}})
			if err != nil {
				t.Fatal(err)
			}
			proctest.FindProcess(t, marker)
			stderr := func() string { return readRing(p, api.StreamStderr) }
			eventually(t, "the shell's moves are done", func() bool { return strings.Contains(stderr(), movesDone) })
			if !strings.Contains(stderr(), "refused: all") {
				// Some move went through: the sweep finds the stray.
				eventually(t, "the sweep logs the stray sleep", func() bool { return strayLogged(logs, "sleep") })
			}
			if err := p.Signal(syscall.SIGKILL, true); err != nil {
				t.Fatalf("KILL the tree: %v", err)
			}
			waitDone(t, p)
			return stderr()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &testenv.SyncBuffer{}
			m := newManager(t, process.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil)), StraySweepInterval: 50 * time.Millisecond})
			requireContainment(t, m)
			outside := outsideCgroups(t, m)
			marker := strconv.Itoa(300000 + rand.IntN(600000))
			t.Cleanup(func() { killMarked(marker) }) // whatever the test's verdict
			var dirs []string
			for _, o := range outside {
				dirs = append(dirs, o.dir)
			}
			shell := fmt.Sprintf(`moved=0; for d in %s; do echo $$ 2>/dev/null >"$d/cgroup.procs" && moved=1 || echo "refused: $d" >&2; done
[ $moved = 0 ] && echo "refused: all" >&2
echo %s >&2
setsid sleep %s`, strings.Join(dirs, " "), movesDone, marker)
			stderr := tc.run(t, m, shell, marker, logs)

			eventually(t, "the stray sleep to die with its tree", func() bool { return len(proctest.Live("sleep\x00"+marker)) == 0 })
			_, note := m.Containment()
			namespaced := strings.Contains(logs.String(), `"cgroup_namespace":true`)
			for _, o := range outside {
				refused := strings.Contains(stderr, "refused: "+o.dir)
				if o.v2 && refused != namespaced {
					t.Errorf("the move into cgroup2's %s: refused %v, want %v (the tree's cgroup namespace binds only where cgroup2 is mounted with nsdelegate; note %q)", o.dir, refused, namespaced, note)
				}
			}
			if !strings.Contains(stderr, "refused: all") && !strayLogged(logs, "sleep") {
				t.Errorf("a move went through (stderr %q) and no stray was logged:\n%s", stderr, logs.String())
			}
		})
	}
}

// outside is a cgroup outside the manager's trees, made for the test.
type outside struct {
	dir string
	v2  bool
}

// outsideCgroups makes, in every hierarchy the manager's trees use, a
// cgroup beside its subtree, and removes it (killing what is in it) when
// the test ends.
func outsideCgroups(t *testing.T, m *process.Manager) []outside {
	t.Helper()
	probe, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"sleep", "1000"}}})
	if err != nil {
		t.Fatal(err)
	}
	dirs := probe.CgroupDirs()
	if err := probe.Signal(syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	waitDone(t, probe)
	var out []outside
	name := fmt.Sprintf("cua-test-outside-%d", rand.Int64())
	for _, d := range dirs {
		// d is <daemon's cgroup>/<subtree>/<group>.
		dir := filepath.Join(filepath.Dir(filepath.Dir(d)), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var fs unix.Statfs_t
		if err := unix.Statfs(dir, &fs); err != nil {
			t.Fatal(err)
		}
		o := outside{dir: dir, v2: fs.Type == unix.CGROUP2_SUPER_MAGIC}
		out = append(out, o)
		t.Cleanup(func() { emptyAndRemove(t, o) })
	}
	return out
}

// emptyAndRemove kills what is left in a test's outside cgroup (a stray
// the test failed to see killed) and removes it.
func emptyAndRemove(t *testing.T, o outside) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(o.dir, "cgroup.procs"))
		pids := strings.Fields(string(b))
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
		for _, s := range pids {
			if pid, err := strconv.Atoi(s); err == nil && pid > 1 && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(o.dir); err != nil {
		t.Errorf("remove the test's cgroup %s: %v", o.dir, err)
	}
}

// killMarked kills the sleeps the test started, whatever became of them.
func killMarked(marker string) {
	for _, pid := range proctest.Live("sleep\x00" + marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// strayLogged reports whether the log has a stray line naming comm.
func strayLogged(logs *testenv.SyncBuffer, comm string) bool {
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Msg  string `json:"msg"`
			Comm string `json:"comm"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, strayLog) && rec.Comm == comm {
			return true
		}
	}
	return false
}

// readRing reads what a stream's ring holds (its first 64 KiB).
func readRing(p *process.Process, s api.Stream) string {
	r, err := p.Output(s)
	if err != nil {
		return ""
	}
	b := make([]byte, 64<<10)
	return string(b[:r.ReadAt(b, 0).N])
}
