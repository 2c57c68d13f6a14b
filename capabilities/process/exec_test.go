package process_test

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

func TestExec(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{MaxExecOutputBytes: 1 << 16})
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		req  api.ExecRequest
		want api.ExecResult
		kind api.Kind
	}{
		{name: "argv", req: api.ExecRequest{Command: api.Command{Argv: []string{"echo", "a b", "c"}}},
			want: api.ExecResult{Stdout: "a b c\n"}},
		{name: "shell", req: api.ExecRequest{Command: api.Command{Shell: "echo out; echo err >&2; exit 3"}},
			want: api.ExecResult{Stdout: "out\n", Stderr: "err\n", ExitCode: 3}},
		{name: "env merged over the daemon's", req: api.ExecRequest{Command: api.Command{
			Shell: `echo "$FOO|${PATH:+path}"`, Env: map[string]string{"FOO": "bar"}}},
			want: api.ExecResult{Stdout: "bar|path\n"}},
		{name: "cwd", req: api.ExecRequest{Command: api.Command{Argv: []string{"pwd"}, Cwd: dir}},
			want: api.ExecResult{Stdout: dir + "\n"}},
		{name: "stdin", req: api.ExecRequest{Command: api.Command{Argv: []string{"cat"}}, Stdin: "piped\n"},
			want: api.ExecResult{Stdout: "piped\n"}},
		{name: "killed by signal", req: api.ExecRequest{Command: api.Command{Shell: "kill -TERM $$"}},
			want: api.ExecResult{ExitCode: 128 + 15, Signal: "TERM"}},
		{name: "truncated", req: api.ExecRequest{Command: api.Command{Shell: "head -c 100 /dev/zero | tr '\\0' x"}, MaxOutputBytes: 10},
			want: api.ExecResult{Stdout: "xxxxxxxxxx", StdoutTruncated: true}},
		{name: "user by name", req: api.ExecRequest{Command: api.Command{Argv: []string{"id", "-un"}, User: currentUser(t)}},
			want: api.ExecResult{Stdout: currentUser(t) + "\n"}},
		{name: "no program", req: api.ExecRequest{Command: api.Command{Argv: []string{"/no/such/program"}}}, kind: api.KindNotFound},
		{name: "no cwd", req: api.ExecRequest{Command: api.Command{Argv: []string{"true"}, Cwd: "/no/such/dir"}}, kind: api.KindInvalidArgument},
		{name: "both forms", req: api.ExecRequest{Command: api.Command{Argv: []string{"true"}, Shell: "true"}}, kind: api.KindInvalidArgument},
		{name: "neither form", req: api.ExecRequest{}, kind: api.KindInvalidArgument},
		{name: "output over limit", req: api.ExecRequest{Command: api.Command{Argv: []string{"true"}}, MaxOutputBytes: 1 << 20}, kind: api.KindInvalidArgument},
		{name: "unknown user", req: api.ExecRequest{Command: api.Command{Argv: []string{"true"}, User: "no-such-user-xyz"}}, kind: api.KindNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Exec(t.Context(), tc.req)
			if tc.kind != "" {
				if api.KindOf(err) != tc.kind {
					t.Fatalf("err %v (kind %q), want kind %q", err, api.KindOf(err), tc.kind)
				}
				return
			}
			if err != nil {
				t.Fatalf("exec: %v", err)
			}
			res.DurationMS = 0
			if !reflect.DeepEqual(*res, tc.want) {
				t.Fatalf("got %+v\nwant %+v", *res, tc.want)
			}
		})
	}
}

func TestExecHidesToken(t *testing.T) {
	t.Setenv("CUA_SPACESD_TOKEN", "secret-token-value")
	m := newManager(t, process.Options{})
	res, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{Argv: []string{"env"}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "secret-token-value") || strings.Contains(res.Stdout, "CUA_SPACESD_TOKEN") {
		t.Fatalf("the token reached the child's environment")
	}
}

func currentUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Skipf("current user: %v", err)
	}
	return u.Username
}

// A background child that leaves the command's group holding stdin (more
// than a pipe buffer of it, unread) must not hold Exec's answer: the
// command itself has exited.
func TestExecStdinHeldByBackgroundChild(t *testing.T) {
	t.Parallel()
	m := newManager(t, process.Options{})
	// The child runs while a marker file exists, so the test can end it
	// without signalling a pid it never reaped; the marker goes after a
	// minute anyway, so a hung Exec returns and the test can tell.
	marker := filepath.Join(t.TempDir(), "hold")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(time.Minute, func() { _ = os.Remove(marker) })
	defer release.Stop()
	defer os.Remove(marker)
	script := fmt.Sprintf(`exec 3<&0; setsid sh -c 'while [ -e %s ]; do sleep 0.05; done' <&3 >/dev/null 2>&1 & echo started`, marker)
	res, err := m.Exec(t.Context(), api.ExecRequest{Command: api.Command{Shell: script}, Stdin: strings.Repeat("x", 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	if _, serr := os.Stat(marker); serr != nil {
		t.Fatal("Exec answered only after the background child let go of stdin")
	}
	if res.Stdout != "started\n" || res.ExitCode != 0 {
		t.Fatalf("got %+v", res)
	}
}
