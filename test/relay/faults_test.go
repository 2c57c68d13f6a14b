package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/faultproxy"
)

// registeredSpace is a Space without a display, registered on the relay by
// alice's bridge, attached.
func registeredSpace(t *testing.T, w *world, alice *bridge) (*space, api.RelayStatus) {
	t.Helper()
	s := startSpace(t, "")
	alice.addSpace(t, "box", s)
	if r := alice.register(t, "box"); !r.Online {
		t.Fatalf("relay_register_space: %+v, want online", r)
	}
	return s, s.waitConnected(t, 0)
}

// bash runs a command on relay:box through alice's space_bash and answers
// its stdout.
func (b *bridge) bash(t testing.TB, command string) string {
	t.Helper()
	var res struct {
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		ExitCode int    `json:"exit_code"`
	}
	b.call(t, "space_bash", map[string]any{"space": "relay:box", "command": command}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("space_bash %q: exit %d, %q", command, res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// A cut of the Space's link to the relay, in the middle of a PTY
// session's output: the Space redials by itself, a new session works, and
// the process, which lived on, replays its output from the offset the
// client had read to, with no byte lost or repeated.
func TestCutMidPTY(t *testing.T) {
	w := newWorld(t)
	alice := newBridge(t, w, w.user("alice"))
	s, first := registeredSpace(t, w, alice)
	c, _, err := alice.reg.Client("relay:box")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const lines = 300
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo line-$i; i=$((i+1)); sleep 0.01; done`, lines)
	p, err := c.Start(ctx, api.StartRequest{Command: api.Command{Argv: []string{"sh", "-c", script}}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	st, err := c.StreamProcess(ctx, p.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for got.Len() < 200 {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("before the cut: %v", err)
		}
		if ev.Type == "output" {
			if ev.Offset != int64(got.Len()) {
				t.Fatalf("output at offset %d after %d bytes", ev.Offset, got.Len())
			}
			got.Write(ev.Data)
		}
	}
	w.link.CutAll()
	// The stream ends with the session that carried it.
	for {
		ev, err := st.Next()
		if err != nil {
			break
		}
		if ev.Type == "output" && ev.Offset == int64(got.Len()) {
			got.Write(ev.Data) // what was already on its way
		}
	}
	st.Close()
	s.waitConnected(t, first.ConnectedSinceMS)
	if out := alice.bash(t, "echo after-the-cut"); out != "after-the-cut\n" {
		t.Fatalf("a call after the cut answered %q", out)
	}
	st, err = c.StreamProcess(ctx, p.ID, int64(got.Len()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("after the cut: %v (read %d bytes)", err, got.Len())
		}
		if ev.Type == "gap" {
			t.Fatalf("the replay lost %d bytes", ev.Lost)
		}
		if ev.Type == "exit" {
			break
		}
		if ev.Type == "output" {
			if ev.Offset != int64(got.Len()) {
				t.Fatalf("replayed output at offset %d after %d bytes", ev.Offset, got.Len())
			}
			got.Write(ev.Data)
		}
	}
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, "line-%d\r\n", i)
	}
	if got.String() != want.String() {
		t.Fatalf("the output read across the cut is not the output written: %d bytes, want %d", got.Len(), want.Len())
	}
}

// The relay restarted (SIGTERM, then a new process on the same data dir):
// the Space attaches again by itself, and its computer, its owner and the
// owner's token are all still there.
func TestRelayRestart(t *testing.T) {
	w := newWorld(t)
	alice := newBridge(t, w, w.user("alice"))
	s, first := registeredSpace(t, w, alice)
	w.restartRelay()
	s.waitConnected(t, first.ConnectedSinceMS)
	if out := alice.bash(t, "echo after-the-restart"); out != "after-the-restart\n" {
		t.Fatalf("a call after the relay's restart answered %q", out)
	}
	out, errOut, code := alice.cli(t, "relay", "status")
	if code != 0 || !strings.Contains(out, "box") {
		t.Fatalf("relay status after the restart: exit %d, %q %q: want the computer box", code, out, errOut)
	}
}

// An exec whose answer is lost in a cut between the bridge and the relay
// is retried by the bridge with its idempotency key, through the relay,
// and runs once: a counter file in the Space proves it.
func TestExecAnswerLostRunsOnce(t *testing.T) {
	w := newWorld(t)
	alice := newBridge(t, w, w.user("alice"))
	s, _ := registeredSpace(t, w, alice)
	// alice's bridge reaches the relay through a proxy of its own.
	front, err := faultproxy.Start(w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	login, err := alice.reg.Relay()
	if err != nil {
		t.Fatal(err)
	}
	login.URL = "https://" + front.Addr
	if _, err := alice.reg.LoginRelay(context.Background(), login); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(s.stateDir, "counter")
	// A first call sets up the pooled TLS connection: the cut then falls
	// on an answer, not on a handshake.
	alice.bash(t, "true")
	front.CutAnswers(1)
	if out := alice.bash(t, "echo ran >> "+counter+"; echo done"); out != "done\n" {
		t.Fatalf("the retried exec answered %q", out)
	}
	if front.Cut.Load() != 1 {
		t.Fatalf("%d answers cut, want 1", front.Cut.Load())
	}
	b, err := os.ReadFile(counter)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "ran\n"); n != 1 {
		t.Fatalf("the command ran %d times, want once", n)
	}
}

// A Space restarted (its daemon stopped and started on the same state dir)
// attaches again by itself: nobody registers it again.
func TestSpaceRestartReattaches(t *testing.T) {
	w := newWorld(t)
	alice := newBridge(t, w, w.user("alice"))
	s, _ := registeredSpace(t, w, alice)
	s.restart(t)
	s.waitConnected(t, 0)
	if out := alice.bash(t, "echo after-the-reboot"); out != "after-the-reboot\n" {
		t.Fatalf("a call after the Space's restart answered %q", out)
	}
}
