package mcpsvc_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcptest"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
)

// grandchildMark is where the service's shell writes its grandchild's pid.
const grandchildMark = "grandchild.pid"

// An idle stop ends the service's whole tree: a grandchild that left the
// service's process group and session (setsid) dies with the service, and
// its record lists no descendant left behind. Before, it lived on, listed
// and counted, until the daemon stopped.
func TestIdleStopKillsTheWholeTree(t *testing.T) {
	// The shell starts the grandchild (which writes its own pid, then
	// becomes the sleep), then becomes the test's MCP server.
	script := `setsid sh -c 'echo $$ > "$CUA_MCPTEST_DIR/` + grandchildMark + `"; exec sleep 1000' </dev/null >/dev/null 2>&1 &
exec "$0"`
	e := newEnv(t, mcpsvc.ServiceConfig{
		Name: "test", Transport: mcpsvc.TransportStdio,
		Command: "/bin/sh", Args: []string{"-c", script, mcptest.Command()}, Env: mcptest.Env(mcptest.ModeServe, ""),
		InitTimeout: mcpsvc.DefaultInitTimeout, IdleTimeout: 300 * time.Millisecond,
	})
	cs := e.client(t, nil)
	if res := call(t, cs, "call_tool", map[string]any{"service": "test", "tool": "echo", "arguments": map[string]any{"text": "hi"}}); mcptest.Text(res) != "hi" {
		t.Fatalf("echo: %+v", res)
	}
	var pid int
	eventually(t, "the grandchild writes its pid", func() bool {
		b, err := os.ReadFile(filepath.Join(e.dir, grandchildMark))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0 && running(pid) && comm(pid) == "sleep"
	})
	record := func() api.ProcessInfo {
		procs, err := e.d.Client.Processes(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			if p.Tag == "mcp:test" {
				return p
			}
		}
		t.Fatalf("no process tagged mcp:test in %+v", procs)
		return api.ProcessInfo{}
	}
	eventually(t, "the idle service stops", func() bool { return record().State == api.StateExited })
	eventually(t, "the grandchild dies with the service", func() bool { return !running(pid) })
	if p := record(); len(p.Descendants) != 0 {
		t.Fatalf("the stopped service still lists descendants: %+v", p)
	}
}

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X' && syscall.Kill(pid, 0) == nil
}

// comm is the command name of pid.
func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}
