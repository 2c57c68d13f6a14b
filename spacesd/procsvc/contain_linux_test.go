package procsvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/proctest"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/daemon"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// requireContainment fails under CI (its machines have writable cgroups)
// and skips elsewhere when the daemon runs its processes without them.
func requireContainment(t *testing.T, c *client.Client) api.Limits {
	t.Helper()
	caps, err := c.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if caps.Limits.ProcessContainment == "off" {
		testenv.Missing(t, "process containment is off here: %s", caps.Limits.ProcessContainmentNote)
	}
	return caps.Limits
}

// waitFor polls ok until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventuallyTrue is waitFor answering instead of failing.
func eventuallyTrue(ok func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// bombEnd describes how the daemon's processes of the bomb ended, if they
// did (an early exit 99 is the bomb refusing to fork outside its cgroup).
func bombEnd(t *testing.T, c *client.Client, marker string) string {
	list, err := c.Processes(t.Context())
	if err != nil {
		return "processes: " + err.Error()
	}
	var b strings.Builder
	for _, p := range list {
		if strings.Contains(strings.Join(p.Argv, " "), marker) {
			exit := "none"
			if p.ExitCode != nil {
				exit = strconv.Itoa(*p.ExitCode)
			}
			fmt.Fprintf(&b, "process %s: %s, exit %s, signal %q, descendants %v\n", p.ID, p.State, exit, p.Signal, p.Descendants)
		}
	}
	return b.String()
}

// pidsDir is the pids cgroup directory of process pid ("" if none).
func pidsDir(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[1] == "pids" {
			return "/sys/fs/cgroup/pids" + f[2]
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return "/sys/fs/cgroup" + p // a pure cgroup2 host
		}
	}
	return ""
}

func readInt(file string) int64 {
	b, _ := os.ReadFile(file)
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// refusedForks is how many forks the pids controller refused in dir
// (the "max" line of pids.events).
func refusedForks(dir string) int64 {
	b, _ := os.ReadFile(filepath.Join(dir, "pids.events"))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// bombPidsMax is the pids.max the fork bomb runs under.
const bombPidsMax = 64

// bombScript is a fork bomb that first checks it runs in a cgroup whose
// pids.max is bombPidsMax and refuses to fork otherwise (exit 99). Its
// shells, and the sleep its leader becomes, carry marker (a fraction of a
// second, which sleep adds to its 600) in their command line.
//
// The first shell forks once, before the bomb grows, then becomes the
// sleep: dash gives up on a refused fork of its own, and the process the
// test ends must outlive the bomb's burning out.
func bombScript(marker string) string {
	return fmt.Sprintf(`: %s
p=$(sed -n 's/^[0-9]*:pids:\(.*\)$/\1/p' /proc/self/cgroup)
if [ -n "$p" ]; then f=/sys/fs/cgroup/pids$p/pids.max; else f=/sys/fs/cgroup$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)/pids.max; fi
[ "$(cat "$f" 2>/dev/null)" = %d ] || { echo "refusing to fork: $f is not %[2]d" >&2; exit 99; }
b(){ b|b& }; (b) & exec sleep 600 %[1]s`, marker, bombPidsMax)
}

// TestForkBombStaysInItsCgroup runs a fork bomb through the daemon, only
// under a per-process pids.max that the test checks before it starts the
// bomb (and that the bomb checks again before it forks). The daemon keeps
// answering, the bomb never holds more than its limit, and it dies whole
// with its exec's timeout, or with a KILL of its process.
func TestForkBombStaysInItsCgroup(t *testing.T) {
	t.Parallel()
	d := spacesdtest.Start(t, spacesdtest.Options{Process: process.Options{
		TreePidsMax: bombPidsMax, ChildrenPidsMax: 4 * bombPidsMax}})
	c := d.Client
	if l := requireContainment(t, c); l.ProcessPidsMax != bombPidsMax {
		t.Fatalf("refusing to start a fork bomb: process_pids_max is %d, want %d (%s)", l.ProcessPidsMax, bombPidsMax, l.ProcessContainmentNote)
	}
	for _, tc := range []struct {
		name string
		// start starts script and answers a func that ends it and
		// checks how it ended.
		start func(t *testing.T, script string) (end func())
	}{
		{"exec timeout", func(t *testing.T, script string) func() {
			type answer struct {
				res *api.ExecResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := c.Exec(t.Context(), api.ExecRequest{Command: api.Command{Shell: script, TimeoutMS: 8000}})
				done <- answer{res, err}
			}()
			return func() {
				a := <-done
				if a.err != nil || !a.res.TimedOut || a.res.Signal != "KILL" {
					t.Fatalf("exec of the bomb: %+v, %v; want timed out", a.res, a.err)
				}
			}
		}},
		{"signal KILL", func(t *testing.T, script string) func() {
			info, err := c.Start(t.Context(), api.StartRequest{Command: api.Command{Shell: script}})
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := c.Signal(t.Context(), info.ID, "KILL"); err != nil {
					t.Fatal(err)
				}
				if exit := waitExit(t, c, info.ID); exit.Signal != "KILL" {
					t.Fatalf("exit %+v", exit)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("0.%d", rand.Uint32())
			end := tc.start(t, bombScript(marker))
			var dir string
			waitFor(t, "the bomb to run", func() bool {
				for _, pid := range proctest.Live(marker) {
					if dir = pidsDir(pid); dir != "" {
						return true
					}
				}
				return false
			})
			// A dash bomb reaches its limit in milliseconds and may then burn
			// out (dash exits when a fork fails), so the test looks for what
			// stays: the cgroup's high-water mark and its refused forks.
			reached := func() bool {
				return readInt(filepath.Join(dir, "pids.peak")) >= bombPidsMax ||
					readInt(filepath.Join(dir, "pids.current")) >= bombPidsMax ||
					refusedForks(dir) > 0
			}
			if !eventuallyTrue(reached) {
				// Say what the bomb did: a bomb outside its cgroup refuses to
				// fork (exit 99), which leaves pids.current low.
				var where strings.Builder
				for _, pid := range proctest.Live(marker) {
					b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
					fmt.Fprintf(&where, "pid %d:\n%s", pid, b)
				}
				procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
				t.Fatalf("the bomb never reached its limit in %s: pids.max %d, pids.current %d, pids.peak %d, refused forks %d, members %q; its processes now:\n%s%s",
					dir, readInt(filepath.Join(dir, "pids.max")), readInt(filepath.Join(dir, "pids.current")), readInt(filepath.Join(dir, "pids.peak")),
					refusedForks(dir), procs, where.String(), bombEnd(t, c, marker))
			}
			if _, err := c.Health(t.Context()); err != nil {
				t.Fatalf("health during the bomb: %v", err)
			}
			if res, err := c.Exec(t.Context(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}}); err != nil || res.ExitCode != 0 {
				t.Fatalf("exec during the bomb: %+v, %v", res, err)
			}
			if peak := readInt(filepath.Join(dir, "pids.peak")); peak > bombPidsMax {
				t.Fatalf("the bomb held %d tasks, over its pids.max %d", peak, bombPidsMax)
			}
			end()
			waitFor(t, "the bomb to die whole", func() bool { return len(proctest.Live(marker)) == 0 })
			waitFor(t, "its cgroup to be empty (removed, or recycled for another process)", func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
				return err != nil || len(strings.TrimSpace(string(b))) == 0
			})
		})
	}
}

// escapeesShell starts children that leave the process group, each a sleep
// of a unique length found again by sleepMarkers.
func escapeesShell() (shell string, markers []string) {
	base := 300000 + rand.IntN(600000)
	for i := range 3 {
		markers = append(markers, "sleep\x00"+strconv.Itoa(base+i)+"\x00")
	}
	return fmt.Sprintf("setsid sleep %d & timeout 1000 sleep %d & sleep %d & wait", base, base+1, base+2), markers
}

func liveOf(markers []string) []int {
	var out []int
	for _, m := range markers {
		out = append(out, proctest.Live(m)...)
	}
	return out
}

// TestEscapeesDieWithTheClient: a setsid grandchild (and GNU timeout's
// child) of an exec dies when the HTTP client goes away.
func TestEscapeesDieWithTheClient(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	requireContainment(t, c)
	shell, markers := escapeesShell()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for len(liveOf(markers)) < 4 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel() // the client goes away: its connection closes
	}()
	if _, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: shell}}); err == nil {
		t.Fatal("exec answered though its client left")
	}
	waitFor(t, "the escapees to die", func() bool { return len(liveOf(markers)) == 0 })
}

// TestEscapeesDieAtShutdown: what the daemon started dies with it, through
// its cgroups, setsid children included.
func TestEscapeesDieAtShutdown(t *testing.T) {
	t.Parallel()
	srv, err := daemon.New(daemon.Options{Version: "test", Auth: server.NewAuth("", slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := testenv.Serve(t, srv.Serve)
	c, err := client.New("http://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	requireContainment(t, c)
	shell, markers := escapeesShell()
	if _, err := c.Start(t.Context(), api.StartRequest{Command: api.Command{Shell: shell}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the escapees to start", func() bool { return len(liveOf(markers)) >= 4 })
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if live := liveOf(markers); len(live) > 0 {
		t.Fatalf("alive after the daemon shut down: %v", live)
	}
}

// TestBackgroundChildListedUnderItsExec: `app &` run through exec lives
// on, listed under the exec's record with its pid, and dies when that
// record is signalled.
func TestBackgroundChildListedUnderItsExec(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	requireContainment(t, c)
	ctx := t.Context()
	res, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: "sleep 1000 >/dev/null 2>&1 & echo $!"}})
	if err != nil {
		t.Fatal(err)
	}
	app, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if res.ProcessID == "" || !slices.Equal(res.Descendants, []int{app}) {
		t.Fatalf("exec %+v; want a process id and descendants [%d]", res, app)
	}
	list, err := c.Processes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(p api.ProcessInfo) bool { return p.ID == res.ProcessID })
	if i < 0 || !list[i].Exec || !slices.Equal(list[i].Descendants, []int{app}) {
		t.Fatalf("list %+v; want the exec's record with descendants [%d]", list, app)
	}
	if err := c.Signal(ctx, res.ProcessID, "TERM"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the background child to die", func() bool { return !proctest.Alive(app) })
	waitFor(t, "the record to have no descendants", func() bool {
		p, err := c.Process(ctx, res.ProcessID)
		return err == nil && len(p.Descendants) == 0
	})
}

// TestStdinAnswersBytes: POST .../stdin answers how many bytes went in.
func TestStdinAnswersBytes(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	ctx := t.Context()
	info, err := c.Start(ctx, api.StartRequest{Command: api.Command{Argv: []string{"cat"}}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(ctx, http.MethodPost, "/v1/processes/"+info.ID+"/stdin", nil, strings.NewReader("eleven byte"), "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var got api.StdinResult
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Bytes != 11 {
		t.Fatalf("stdin answered %d %s; want 200 {\"bytes\": 11}", resp.StatusCode, body)
	}
	if err := c.Signal(ctx, info.ID, "KILL"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, c, info.ID)
}
