package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// startProcess starts a background process in the test Space and kills it
// at the end of the test.
func startProcess(t *testing.T, s *space, shell string) *api.ProcessInfo {
	t.Helper()
	info, err := s.d.Client.Start(t.Context(), api.StartRequest{Command: api.Command{Shell: shell}})
	if err != nil {
		t.Fatalf("start %q: %v", shell, err)
	}
	t.Cleanup(func() { _ = s.d.Client.Signal(t.Context(), info.ID, "KILL") })
	return info
}

// waitExited waits until the process has ended.
func waitExited(t *testing.T, s *space, id string) {
	t.Helper()
	eventually(t, "process "+id+" to end", func() bool {
		p, err := s.d.Client.Process(t.Context(), id)
		return err == nil && p.State == api.StateExited
	})
}

func TestPs(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	ended := startProcess(t, s, "exit 3")
	running := startProcess(t, s, "sleep 600")
	waitExited(t, s, ended.ID)

	r := run(t.Context(), s.home, "", "ps", "dev")
	if r.code != 0 {
		t.Fatalf("ps: %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("ps printed %q", r.stdout)
	}
	for _, want := range []struct{ id, state, command string }{
		{ended.ID, "exit 3", "exit 3"}, {running.ID, "running", "sleep 600"},
	} {
		found := false
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, want.id+" ") {
				found = strings.Contains(l, want.state) && strings.HasSuffix(l, want.command)
			}
		}
		if !found {
			t.Errorf("ps shows no %s %s (%s):\n%s", want.id, want.state, want.command, r.stdout)
		}
	}

	r = run(t.Context(), s.home, "", "ps", "--json", "dev")
	var list []api.ProcessInfo
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 || len(list) != 2 {
		t.Fatalf("ps --json: %+v (%v)", r, err)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ps"}, 2, "usage"},
		{[]string{"ps", "nope"}, 1, "no space named"},
	} {
		if r := run(t.Context(), s.home, "", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %+v", tc.args, r)
		}
	}
}
