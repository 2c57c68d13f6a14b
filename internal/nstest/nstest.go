//go:build linux

// Package nstest runs a package's tests in network and mount namespaces of
// their own: only lo up, and a private directory of X sockets.
//
// Why: several test runs share one machine (developers, helpers, CI), and
// a run's X servers must not meet another run's. Xvfb picks its display by
// lock files in /tmp and takes over a display whose lock names a process
// it cannot see (the lock of an X server in another pid namespace, as a CI
// run has): it then unlinks that display's socket and binds its own there,
// and the other run's clients reach the wrong server. In a mount namespace
// with its own /tmp/.X11-unix, and a network namespace with its own
// abstract sockets and ports, the runs cannot touch each other; and no
// packet of a test can leave the machine.
package nstest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"golang.org/x/sys/unix"
)

// envInside marks the run inside the namespaces (the re-executed binary).
const envInside = "CUA_TEST_NAMESPACES"

// x11SocketDir is where X servers put their sockets (and clients look).
const x11SocketDir = "/tmp/.X11-unix"

// Main isolates the test binary; call it first in TestMain, after any
// part the binary plays as a child process of its own tests. The first
// run re-executes itself inside new namespaces and exits with that run's
// code; inside, Main sets them up and returns. Without the privilege to
// make namespaces (an unprivileged run on a laptop) it says so and
// returns, the tests then running on the host; under CI=true that fails
// instead, since CI runs as root, where it cannot.
func Main(pkg string) {
	if Inside() {
		if err := setUp(); err != nil {
			fmt.Fprintf(os.Stderr, "%s tests: %v\n", pkg, err)
			os.Exit(1)
		}
		return
	}
	code, err := reexec()
	if err == nil {
		os.Exit(code)
	}
	if testenv.CI() {
		fmt.Fprintf(os.Stderr, "%s tests: cannot enter namespaces of their own (%v), and CI=true requires it\n", pkg, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%s tests: no namespaces of their own (%v): running on the host's loopback and X sockets\n", pkg, err)
}

// Inside reports whether the tests run in the namespaces Main made.
func Inside() bool { return os.Getenv(envInside) != "" }

// reexec runs this test binary again, with the same arguments, in new
// network and mount namespaces, and answers its exit code. Everything
// the tests start is born inside and inherits them.
func reexec() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envInside+"=1")
	// Pdeathsig: a run killed from outside (go test's timeout) takes the
	// inner run with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	// Interrupts go to the inner run, which cleans up its processes.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	close(done)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if st, ok := exit.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 1, nil
	}
	return 0, nil
}

func setUp() error {
	if err := SetLoopback(true); err != nil {
		return err
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return fmt.Errorf("the tests' network namespace has the interface %s besides lo", i.Name)
		}
	}
	return ownDisplaySockets()
}

// ownDisplaySockets gives the namespace an empty directory of X sockets.
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

// SetLoopback brings lo up or down: down is a network drop for every
// connection of the namespace. Only ever inside the namespaces Main made:
// the host's lo is not the tests'.
func SetLoopback(up bool) error {
	if !Inside() {
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
