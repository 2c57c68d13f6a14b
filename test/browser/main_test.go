package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/internal/nstest"
	"github.com/trycua/cua-spacesd/spacesd/daemon"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// The test binary plays one more part, chosen by its environment: with
// envDaemon set it is a daemon process (daemonConfig as JSON), which a test
// kills with SIGKILL and starts again, as a crash and a restart.
const envDaemon = "CUA_BROWSER_TEST_DAEMON"

// TestMain runs the tests in network and mount namespaces of their own
// (nstest): Xvfb, the daemons and Chromium are born inside, so no packet
// of theirs can leave the machine, and their X sockets are their own.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(envDaemon); cfg != "" {
		os.Exit(runDaemon(cfg))
	}
	nstest.Main("test/browser")
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// daemonConfig is what a daemon process of the tests serves.
type daemonConfig struct {
	Listen    string `json:"listen"`
	TokenFile string `json:"token_file"`
	Display   string `json:"display"`
	// StateDir, when set, is the daemon's state dir (its relay
	// attachment's among the rest).
	StateDir string `json:"state_dir,omitempty"`
}

// runDaemon is the daemon process: the daemon cua-spacesd assembles
// (spacesd/daemon), serving until SIGTERM, or killed.
func runDaemon(cfg string) int {
	var c daemonConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, "daemon config:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	auth, err := server.NewFileAuth(c.TokenFile, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o := daemon.Options{Version: "test", Auth: auth, Logger: log, Display: c.Display,
		Stream: streamsvc.Options{UDPAddr: "127.0.0.1:0"}}
	if c.StateDir != "" {
		o.Files, o.Relay = filesvc.Options{StateDir: c.StateDir}, relaysvc.Options{StateDir: c.StateDir}
	}
	srv, err := daemon.New(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
