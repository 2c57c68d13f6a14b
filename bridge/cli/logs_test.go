package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

func TestLogs(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	p := startProcess(t, s, "echo out; echo err >&2; exit 4")
	waitExited(t, s, p.ID)
	r := run(t.Context(), s.home, "", "logs", "dev", p.ID)
	if r.code != 0 || r.stdout != "out\n" || r.stderr != "err\n" {
		t.Fatalf("logs: %+v", r)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"logs", "dev"}, 2, "usage"},
		{[]string{"logs", "dev", "no-such-process"}, 1, "not_found"},
		{[]string{"logs", "-f", "dev", "no-such-process"}, 1, "not_found"},
	} {
		if r := run(t.Context(), s.home, "", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %+v", tc.args, r)
		}
	}
}

// What the ring dropped is said, and what it kept is printed.
func TestLogsSaysWhatWasLost(t *testing.T) {
	const ring = 64
	s := startSpace(t, spacesdtest.Options{Process: process.Options{RingBytes: ring}})
	p := startProcess(t, s, `i=0; while [ $i -lt 100 ]; do printf '%09d\n' $i; i=$((i+1)); done`)
	waitExited(t, s, p.ID)
	r := run(t.Context(), s.home, "", "logs", "dev", p.ID)
	if r.code != 0 || len(r.stdout) != ring || !strings.HasSuffix(r.stdout, "000000099\n") ||
		!strings.Contains(r.stderr, fmt.Sprintf("%d bytes of stdout were lost", 1000-ring)) {
		t.Fatalf("logs: %+v", r)
	}
}

// logs -f prints the output as it comes, from the start, and ends with
// the process.
func TestLogsFollow(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	p := startProcess(t, s, `i=0; while [ $i -lt 10 ]; do echo "line $i"; i=$((i+1)); sleep 0.05; done; exit 5`)
	r := run(t.Context(), s.home, "", "logs", "-f", "dev", p.ID)
	var want strings.Builder
	for i := range 10 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if r.code != 0 || r.stdout != want.String() || !strings.Contains(r.stderr, "ended: exit 5") {
		t.Fatalf("logs -f: %+v", r)
	}
}

// Ctrl-C stops following, not the process.
func TestLogsFollowInterrupted(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	p := startProcess(t, s, `echo started; exec sleep 600`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb testenv.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- runEnv(ctx, s.home, &out, &errb, "logs", "-f", "dev", p.ID) }()
	eventually(t, "the first line", func() bool { return out.String() == "started\n" })
	cancel()
	if code := <-done; code != 130 {
		t.Fatalf("logs -f after Ctrl-C: exit %d, stderr %q", code, errb.String())
	}
	info, err := s.d.Client.Process(t.Context(), p.ID)
	if err != nil || info.State != api.StateRunning {
		t.Fatalf("the process after logs -f was interrupted: %+v, %v", info, err)
	}
}
