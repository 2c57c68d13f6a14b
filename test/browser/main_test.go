package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/spacesd/daemon"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// The test binary plays two more parts, chosen by its environment:
//   - envNetns set: it runs inside the network namespace its first run made
//     (see TestMain).
//   - envDaemon set: it is a daemon process (daemonConfig as JSON), which a
//     test kills with SIGKILL and starts again, as a crash and a restart.
const (
	envNetns  = "CUA_BROWSER_TEST_NETNS"
	envDaemon = "CUA_BROWSER_TEST_DAEMON"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(envDaemon); cfg != "" {
		os.Exit(runDaemon(cfg))
	}
	if os.Getenv(envNetns) == "" {
		code, err := inNetns()
		if err == nil {
			os.Exit(code)
		}
		// Without the privilege to make a namespace (an unprivileged run
		// on a laptop) the tests still keep to loopback by their flags and
		// candidates, and say so; CI runs as root, where this cannot fail.
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "browser tests: cannot enter a network namespace of their own (%v), and CI=true requires it\n", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "browser tests: no network namespace of their own (%v): running on the host's loopback\n", err)
	} else if err := onlyLoopback(); err != nil {
		fmt.Fprintf(os.Stderr, "browser tests: %v\n", err)
		os.Exit(1)
	} else if err := ownDisplaySockets(); err != nil {
		fmt.Fprintf(os.Stderr, "browser tests: %v\n", err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// inNetns runs this test binary again, with the same arguments, in a new
// network namespace, and answers its exit code. Everything the tests start
// (Xvfb, the daemons, Chromium) is born inside and inherits it, so no
// packet of theirs can leave the machine. A mount namespace of its own
// comes with it, for ownDisplaySockets.
func inNetns() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envNetns+"=1")
	// Pdeathsig: a test run killed from outside (go test's timeout) takes
	// the inner run with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	// Interrupts go to the inner run, which cleans up its processes.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 1, nil
	}
	return 0, nil
}

// onlyLoopback brings lo up in the fresh namespace and checks that it is
// the only interface there.
func onlyLoopback() error {
	if err := setLoopback(true); err != nil {
		return err
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return fmt.Errorf("the test's network namespace has the interface %s besides lo", i.Name)
		}
	}
	return nil
}

// x11SocketDir is where X servers put their sockets (and clients look).
const x11SocketDir = "/tmp/.X11-unix"

// ownDisplaySockets gives the tests' namespace an empty directory of X
// sockets of its own. Xvfb picks its display by lock files in /tmp, and
// takes over a display whose lock names a process it cannot see (the
// lock of an X server in another pid namespace, as another test run on
// the same machine may have): it then unlinks that display's socket and
// binds its own there. In a directory of their own the tests' X servers
// and another run's cannot unlink each other's sockets; the abstract
// sockets are the network namespace's own already.
func ownDisplaySockets() error {
	// Private first: a mount under a shared / would show on the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the tests' mounts private: %w", err)
	}
	if err := os.MkdirAll(x11SocketDir, 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", x11SocketDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=1m"); err != nil {
		return fmt.Errorf("mount the tests' own %s: %w", x11SocketDir, err)
	}
	return nil
}

// setLoopback brings lo up or down: down is a network drop for every
// connection of the namespace (the tests' own are pipes and unix sockets).
// Only ever in the namespace the tests made: the host's lo is not theirs.
func setLoopback(up bool) error {
	if os.Getenv(envNetns) == "" {
		return errors.New("not in the tests' own network namespace: lo is left alone")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("read lo's flags: %w", err)
	}
	flags := ifr.Uint16()
	if up {
		flags |= unix.IFF_UP
	} else {
		flags &^= unix.IFF_UP
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set lo's flags: %w", err)
	}
	return nil
}

// daemonConfig is what a daemon process of the tests serves.
type daemonConfig struct {
	Listen    string `json:"listen"`
	TokenFile string `json:"token_file"`
	Display   string `json:"display"`
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
	srv, err := daemon.New(daemon.Options{Version: "test", Auth: auth, Logger: log, Display: c.Display,
		Stream: streamsvc.Options{UDPAddr: "127.0.0.1:0"}})
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
