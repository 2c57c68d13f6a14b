package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

func TestExec(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"stdout and stderr apart", "", []string{"dev", "--", "sh", "-c", "echo out; echo err >&2"}, 0, "out\n", "err\n"},
		{"exit code passes through", "", []string{"dev", "--", "sh", "-c", "exit 3"}, 3, "", ""},
		{"argv is not reparsed by a shell", "", []string{"dev", "--", "printf", "%s|", "a b", "$HOME"}, 0, "a b|$HOME|", ""},
		{"killed by a signal is 128+N", "", []string{"dev", "--", "sh", "-c", "kill -TERM $$"}, 143, "", ""},
		{"timeout is 124", "", []string{"--timeout", "200ms", "dev", "--", "sleep", "30"}, 124, "", "timed out"},
		{"stdin with -i", "line one\nline two\n", []string{"-i", "dev", "--", "cat"}, 0, "line one\nline two\n", ""},
		{"env and cwd", "", []string{"--env", "GREETING=hi", "--cwd", "/", "dev", "--", "sh", "-c", `echo "$GREETING $(pwd)"`}, 0, "hi /\n", ""},
		{"missing command", "", []string{"nope", "--", "true"}, 255, "", "no space named"},
		{"no command", "", []string{"dev"}, 2, "", "usage"},
		{"unknown program", "", []string{"dev", "--", "/no/such/program"}, 255, "", "no/such/program"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t.Context(), s.home, tt.stdin, append([]string{"exec"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %+v", r.code, tt.wantCode, r)
			}
			if tt.wantStdout != "" || r.code == 0 {
				if r.stdout != tt.wantStdout {
					t.Fatalf("stdout %q, want %q", r.stdout, tt.wantStdout)
				}
			}
			if !strings.Contains(r.stderr, tt.wantStderr) {
				t.Fatalf("stderr %q, want it to contain %q", r.stderr, tt.wantStderr)
			}
		})
	}
}

// Output arrives while the command still runs, not at its end: the command
// waits for a file the test creates only after it saw the first line.
func TestExecStreamsOutputAsItComes(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	gate := filepath.Join(t.TempDir(), "go")
	var out, errb testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runEnv(t.Context(), s.home, &out, &errb, "exec", "dev", "--", "sh", "-c",
			`echo first; while [ ! -e "$1" ]; do sleep 0.01; done; echo second`, "sh", gate)
	}()
	eventually(t, "the first line before the command ends", func() bool { return out.String() == "first\n" })
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 || out.String() != "first\nsecond\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// Cancelling exec (Ctrl-C, or the program told to stop) forwards the signal
// to the command, which may clean up; its own exit code comes back.
func TestExecInterruptForwardsToCommand(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runEnv(ctx, s.home, &out, &errb, "exec", "dev", "--", "sh", "-c",
			`trap 'echo cleaned up; exit 7' TERM; echo ready; while :; do sleep 0.01; done`)
	}()
	eventually(t, "the command to start", func() bool { return strings.Contains(out.String(), "ready") })
	cancel()
	if code := <-done; code != 7 || !strings.Contains(out.String(), "cleaned up") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
