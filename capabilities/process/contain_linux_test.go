package process_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/proctest"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// requireContainment fails under CI, whose machines have writable cgroups,
// and skips elsewhere when the manager runs without them.
func requireContainment(t *testing.T, m *process.Manager) {
	t.Helper()
	if mode, note := m.Containment(); mode == "off" {
		testenv.Missing(t, "process containment is off here: %s", note)
	}
}

// eventually waits (boundedly) for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// escapees is a shell line whose children leave the process group (setsid,
// GNU timeout), each a sleep of a unique length the test finds them by in
// /proc, and which writes their pids to a file as it starts them.
type escapees struct {
	secs    [3]int
	pidFile string
}

func newEscapees(t *testing.T) escapees {
	base := 300000 + rand.IntN(600000)
	return escapees{[3]int{base, base + 1, base + 2}, filepath.Join(t.TempDir(), "pids")}
}

func (e escapees) shell() string {
	return fmt.Sprintf("setsid sleep %d & echo $! >>%s; timeout 1000 sleep %d & echo $! >>%[2]s; sleep %d & echo $! >>%[2]s; wait",
		e.secs[0], e.pidFile, e.secs[1], e.secs[2])
}

// started waits until the shell started all three.
func (e escapees) started(t *testing.T) {
	t.Helper()
	eventually(t, "the escapees to start", func() bool {
		b, _ := os.ReadFile(e.pidFile)
		return strings.Count(string(b), "\n") == 3
	})
}

// live lists the escapees (and timeout's child) still alive.
func (e escapees) live() []int {
	var out []int
	for _, s := range e.secs {
		out = append(out, proctest.Live("sleep\x00"+strconv.Itoa(s)+"\x00")...)
	}
	return out
}

// TestEscapeesDieWithTheirProcess: whatever ends a process (its timeout, a
// KILL or TERM, its caller leaving, the manager closing) ends the
// descendants that left its process group too.
func TestEscapeesDieWithTheirProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// run starts e's shell line and ends it the way the case names.
		run func(t *testing.T, m *process.Manager, e escapees)
	}{
		{"exec timeout", func(t *testing.T, m *process.Manager, e escapees) {
			res, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{Shell: e.shell(), TimeoutMS: 1500}})
			if err != nil || !res.TimedOut {
				t.Fatalf("exec: %+v, %v; want timed out", res, err)
			}
			e.started(t)
		}},
		{"exec caller gone", func(t *testing.T, m *process.Manager, e escapees) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() { e.started(t); cancel() }()
			if _, err := m.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: e.shell()}}); api.KindOf(err) != api.KindCancelled {
				t.Errorf("exec whose caller left: %v", err)
			}
		}},
		{"start timeout", func(t *testing.T, m *process.Manager, e escapees) {
			p, err := m.Start(api.StartRequest{Command: api.Command{Shell: e.shell(), TimeoutMS: 1500}})
			if err != nil {
				t.Fatal(err)
			}
			if info := waitDone(t, p); !info.TimedOut {
				t.Fatalf("info %+v", info)
			}
			e.started(t)
		}},
		{"signal KILL", func(t *testing.T, m *process.Manager, e escapees) {
			p, err := m.Start(api.StartRequest{Command: api.Command{Shell: e.shell()}})
			if err != nil {
				t.Fatal(err)
			}
			e.started(t)
			if err := p.Signal(syscall.SIGKILL, true); err != nil {
				t.Fatal(err)
			}
		}},
		{"signal TERM", func(t *testing.T, m *process.Manager, e escapees) {
			p, err := m.Start(api.StartRequest{Command: api.Command{Shell: e.shell()}})
			if err != nil {
				t.Fatal(err)
			}
			e.started(t)
			if err := p.Signal(syscall.SIGTERM, true); err != nil {
				t.Fatal(err)
			}
		}},
		{"manager close", func(t *testing.T, m *process.Manager, e escapees) {
			if _, err := m.Start(api.StartRequest{Command: api.Command{Shell: e.shell()}}); err != nil {
				t.Fatal(err)
			}
			e.started(t)
			m.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t, process.Options{})
			requireContainment(t, m)
			e := newEscapees(t)
			tc.run(t, m, e)
			eventually(t, "the escapees to die", func() bool { return len(e.live()) == 0 })
		})
	}
}

// TestBackgroundChildLivesOnUnderItsExec: `app &` outlives the exec that
// started it, listed under the exec's record with its pid, counted against
// max_processes, and killable through the record, which then settles.
func TestBackgroundChildLivesOnUnderItsExec(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{MaxProcesses: 1})
	requireContainment(t, m)
	res, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{Shell: "sleep 1000 >/dev/null 2>&1 & echo $!"}})
	if err != nil {
		t.Fatal(err)
	}
	app, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if res.ProcessID == "" || !slices.Equal(res.Descendants, []int{app}) {
		t.Fatalf("exec answered %+v; want a process id and descendants [%d]", res, app)
	}
	p, err := m.Get(res.ProcessID)
	if err != nil {
		t.Fatal(err)
	}
	info := p.Info()
	if !info.Exec || info.State != api.StateExited || *info.ExitCode != 0 || !slices.Equal(info.Descendants, []int{app}) {
		t.Fatalf("record %+v; want an exited exec with descendants [%d]", info, app)
	}
	if !slices.ContainsFunc(m.List(), func(i api.ProcessInfo) bool { return i.ID == res.ProcessID }) {
		t.Fatal("the exec's record is not listed")
	}
	if m.Running() != 1 {
		t.Fatalf("running %d; the background child counts", m.Running())
	}
	if _, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"true"}}}); api.KindOf(err) != api.KindLimitExceeded {
		t.Fatalf("start while the background child holds the only slot: %v", err)
	}
	dirs := p.CgroupDirs()
	if len(dirs) == 0 {
		t.Fatal("the record has no cgroup")
	}
	if err := p.Signal(syscall.SIGTERM, true); err != nil {
		t.Fatal(err)
	}
	assertDead(t, []int{app})
	eventually(t, "the record to settle", func() bool { return len(p.Info().Descendants) == 0 && m.Running() == 0 })
	eventually(t, "its cgroups to be empty (removed, or recycled for another process)", func() bool {
		return !slices.ContainsFunc(dirs, holdsProcesses)
	})
	if err := p.Signal(syscall.SIGTERM, true); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("signal after the tree is gone: %v", err)
	}
	if _, err := m.Start(api.StartRequest{Command: api.Command{Argv: []string{"true"}}}); err != nil {
		t.Fatalf("start once the slot is free: %v", err)
	}
}

// holdsProcesses reports whether the cgroup dir (if it still exists) lists
// any process.
func holdsProcesses(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// TestDetachedLeaderExitKeepsItsTree: a detached process whose leader
// exited keeps its cgroup while a child lives; signals reach the child
// through it, never through the leader's (possibly reused) pid.
func TestDetachedLeaderExitKeepsItsTree(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	requireContainment(t, m)
	p, err := m.Start(api.StartRequest{Command: api.Command{Shell: "setsid sleep 1000 >/dev/null 2>&1 & echo $!"}})
	if err != nil {
		t.Fatal(err)
	}
	info := waitDone(t, p)
	if len(info.Descendants) != 1 || info.State != api.StateExited {
		t.Fatalf("info %+v; want exited with one descendant", info)
	}
	if err := p.Signal(syscall.SIGTERM, false); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("a signal to the exited leader alone: %v", err)
	}
	if err := p.Signal(syscall.SIGKILL, true); err != nil {
		t.Fatalf("kill the tree of an exited leader: %v", err)
	}
	assertDead(t, info.Descendants)
	eventually(t, "the process to settle", func() bool { return len(p.CgroupDirs()) == 0 && m.Running() == 0 })
}

// TestExecCancelNamesTheCause: an exec whose context ends says why: the
// cause it carries, or that the caller went away.
func TestExecCancelNamesTheCause(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	for _, tc := range []struct {
		cause error
		want  string
	}{
		{nil, "the caller went away"},
		{errors.New("the token was rotated"), "the token was rotated"},
	} {
		ctx, cancel := context.WithCancelCause(t.Context())
		marker := fmt.Sprintf("%d", 300000+rand.IntN(600000))
		go func() {
			for len(proctest.Live("sleep\x00"+marker)) == 0 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			cancel(tc.cause)
		}()
		_, err := m.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"sleep", marker}}})
		if api.KindOf(err) != api.KindCancelled || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("exec cancelled with cause %v: %v; want kind cancelled naming %q", tc.cause, err, tc.want)
		}
	}
}

// TestExecE2BIG: a command line over the kernel's limit is the request's
// fault, not retryable, and says so.
func TestExecE2BIG(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	huge := strings.Repeat("x", 256<<10) // over MAX_ARG_STRLEN (128 KiB)
	for _, req := range []api.ExecRequest{
		{Command: api.Command{Argv: []string{"/bin/echo", huge}}},
		{Command: api.Command{Argv: []string{"/bin/true"}, Env: map[string]string{"BIG": huge}}},
	} {
		_, err := m.Exec(t.Context(), req)
		e := api.AsError(err)
		if e == nil || e.Kind != api.KindInvalidArgument || e.Retryable || !strings.Contains(e.Message, "too long") {
			t.Errorf("over-long command: %#v; want invalid_argument, not retryable, saying too long", e)
		}
	}
	if m.Running() != 0 {
		t.Errorf("running %d after failed starts", m.Running())
	}
}

// TestDisplayGoesToChildren: a manager given a display (its cookie, its
// sound server, its session bus) hands it to every child as DISPLAY
// (XAUTHORITY, PULSE_SERVER, DBUS_SESSION_BUS_ADDRESS with the
// accessibility switches), unless the request sets its own.
func TestDisplayGoesToChildren(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{Display: ":42", Xauthority: "/x/cookie", PulseServer: "unix:/x/pulse/native", SessionBus: "unix:path=/x/bus"})
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ":42 /x/cookie unix:/x/pulse/native unix:path=/x/bus gail:atk-bridge 1 1\n"},
		{map[string]string{"DISPLAY": ":7", "XAUTHORITY": "/y", "PULSE_SERVER": "tcp:h", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/y",
			"GTK_MODULES": "m", "QT_ACCESSIBILITY": "0", "ACCESSIBILITY_ENABLED": "0"}, ":7 /y tcp:h unix:path=/y m 0 0\n"},
	} {
		res, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{
			Shell: "echo $DISPLAY $XAUTHORITY $PULSE_SERVER $DBUS_SESSION_BUS_ADDRESS $GTK_MODULES $QT_ACCESSIBILITY $ACCESSIBILITY_ENABLED", Env: tc.env}})
		if err != nil || res.Stdout != tc.want {
			t.Errorf("with env %v: %+v, %v; want %q", tc.env, res, err, tc.want)
		}
	}
}

// TestLimitsReportContainment: the limits name the containment and bounds
// in force, as the manager was asked.
func TestLimitsReportContainment(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{TreePidsMax: 77, ChildrenPidsMax: 500})
	var l api.Limits
	m.Limits(&l)
	if l.ProcessContainment == "off" {
		requireContainment(t, m)
	}
	if l.ProcessPidsMax != 77 || l.ChildrenPidsMax != 500 || l.ProcessMemoryMaxBytes <= 0 {
		t.Fatalf("limits %+v", l)
	}
	off := newManager(t, process.Options{Containment: process.ContainmentOff})
	var lo api.Limits
	off.Limits(&lo)
	if lo.ProcessContainment != "off" || lo.ProcessContainmentNote == "" || lo.ProcessPidsMax != 0 {
		t.Fatalf("limits without containment %+v", lo)
	}
}

func assertDead(t *testing.T, pids []int) {
	t.Helper()
	eventually(t, fmt.Sprintf("pids %v to die", pids), func() bool {
		return !slices.ContainsFunc(pids, proctest.Alive)
	})
}
