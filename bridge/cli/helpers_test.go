package cli_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// space is a real test daemon registered as "dev" in a fresh registry.
type space struct {
	d    *spacesdtest.Daemon
	home string
}

func startSpace(t *testing.T, opts spacesdtest.Options) *space {
	t.Helper()
	d := spacesdtest.Start(t, opts)
	home := t.TempDir()
	reg, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Add(t.Context(), "dev", d.URL, d.Token); err != nil {
		t.Fatal(err)
	}
	return &space{d: d, home: home}
}

// result is what one CLI run printed and answered.
type result struct {
	code           int
	stdout, stderr string
}

// run runs one CLI command against home with stdin.
func run(ctx context.Context, home, stdin string, args ...string) result {
	var out, errb testenv.SyncBuffer
	code := cli.Run(ctx, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Home: home}, args[0], args[1:])
	return result{code, out.String(), errb.String()}
}

// runEnv runs one CLI command with caller-owned output buffers (to watch
// output while the command runs) and no stdin.
func runEnv(ctx context.Context, home string, stdout, stderr *testenv.SyncBuffer, args ...string) int {
	return cli.Run(ctx, cli.Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr, Home: home}, args[0], args[1:])
}

// eventually polls cond until it holds or the test's deadline nears.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := t.Deadline(); ok && d.Before(deadline) {
		deadline = d.Add(-time.Second)
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// needTool skips a test whose tool is missing, or fails it in CI.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Missing(t, "%s not installed: %v", name, err)
	}
	return p
}
