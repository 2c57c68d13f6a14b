package server_test

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/daemon"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// A graceful shutdown lets a running exec finish and answer; only streams
// (which would hold it forever) end at once.
func TestGracefulShutdownLetsExecFinish(t *testing.T) {
	t.Parallel()
	const tok = "shutdown-token"
	srv, err := daemon.New(daemon.Options{Version: "test", Auth: server.NewAuth(tok, slogDiscard())})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := testenv.Serve(t, srv.Serve)
	c, err := client.New("http://"+addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Start(t.Context(), api.StartRequest{Command: api.Command{Argv: []string{"sleep", "100"}}})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.StreamProcess(t.Context(), info.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()

	dir := t.TempDir()
	started, goOn := filepath.Join(dir, "started"), filepath.Join(dir, "go")
	type answer struct {
		res *api.ExecResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := c.Exec(t.Context(), api.ExecRequest{Command: api.Command{
			Shell: fmt.Sprintf("touch %s; while [ ! -e %s ]; do sleep 0.02; done; echo finished", started, goOn)}})
		answered <- answer{res, err}
	}()
	eventually(t, func() bool { _, err := os.Stat(started); return err == nil })
	go stop() // the graceful shutdown begins; the second stop below waits for its end
	// The stream ends with the shutdown's start...
	for {
		if _, err := stream.Next(); err != nil {
			break
		}
	}
	// ...and the listener closes; the exec is still running.
	eventually(t, func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	})
	if err := os.WriteFile(goOn, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := <-answered
	if a.err != nil || a.res.Stdout != "finished\n" || a.res.ExitCode != 0 {
		t.Fatalf("exec across a graceful shutdown: %+v, %v", a.res, a.err)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// eventually polls cond until it holds, failing the test after a minute.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
