package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

// A token given in CUA_SPACESD_TOKEN is not in the serving process's
// /proc/<pid>/environ (nor its command line, nor its children's
// environment), and it is the token the daemon answers to.
func TestEnvTokenLeavesTheEnvironment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/<pid>/environ is Linux's")
	}
	bin := buildDaemon(t)
	const tok = "env-token-7d3f0c2b9a"
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--display", "")
	cmd.Env = append(os.Environ(), tokenEnv+"="+tok, "DISPLAY=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, logged := listenAddrOf(t, stderr)
	if strings.Contains(logged, "stays readable") {
		t.Fatalf("the daemon fell back to keeping the token in its environment:\n%s", logged)
	}

	// The pid is the one started: the daemon re-executed itself in place.
	proc := "/proc/" + strconv.Itoa(cmd.Process.Pid)
	for _, f := range []string{"environ", "cmdline"} {
		b, err := os.ReadFile(filepath.Join(proc, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), tok) || strings.Contains(string(b), tokenEnv+"=") {
			t.Errorf("%s/%s holds the token", proc, f)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"env"}}})
	if err != nil {
		t.Fatalf("the token of the environment: %v", err)
	}
	if strings.Contains(res.Stdout, tok) || strings.Contains(res.Stdout, tokenEnv) {
		t.Errorf("a child's environment names the token:\n%s", res.Stdout)
	}
	wrong, _ := client.New("http://"+addr, tok+"x")
	if _, err := wrong.Capabilities(ctx); api.KindOf(err) != api.KindUnauthenticated {
		t.Fatalf("a wrong token: %v, want unauthenticated", err)
	}
}

// buildDaemon builds this program into the test's temporary directory.
func buildDaemon(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "cua-spacesd")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// listenAddrOf reads the daemon's log up to the line naming its address
// and returns both, then drains the rest so the daemon never blocks on it.
func listenAddrOf(t *testing.T, stderr io.Reader) (addr, logged string) {
	t.Helper()
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if _, rest, ok := strings.Cut(line, `"addr":"`); ok {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			addr, _, _ = strings.Cut(rest, `"`)
			return addr, strings.Join(seen, "\n")
		}
	}
	t.Fatalf("the daemon ended without naming its address:\n%s", strings.Join(seen, "\n"))
	return "", ""
}
