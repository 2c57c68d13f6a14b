// Package pulseserver starts a private PulseAudio: its own directories,
// its own native socket, a null sink as its default sink and nothing else
// (no devices, no X11, no D-Bus), so that many can run on one machine at
// once, as root or as any user. The daemon starts one beside its own X
// server (--xvfb), and the audio tests (audiotest) theirs.
//
// It stands apart from package audio, which captures from any sound
// server, so that audio's protocol tests may use it without a cycle.
package pulseserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/internal/capped"
	"github.com/trycua/cua-spacesd/internal/procgroup"
)

// The format of the null sink: what package audio's capture asks of
// the server, so that no resampling stands between a sound and its
// capture.
const (
	SampleRate = 48000
	Channels   = 2
)

// Limits of a server Start starts.
const (
	// serverStartTimeout bounds the server's start (until its socket takes
	// a connection); serverStopTimeout its exit after SIGTERM, before
	// SIGKILL.
	serverStartTimeout = 15 * time.Second
	serverStopTimeout  = 5 * time.Second
	// serverLogMax is the most of the server's stderr a Server keeps (the
	// first bytes: what explains a failed start).
	serverLogMax = 64 << 10
	// maxSocketPath is what a unix socket's path may hold (sun_path, less
	// its NUL).
	maxSocketPath = 107
)

// Options configure Start.
type Options struct {
	// Sink is the name of a null sink to load as the default sink; ""
	// loads none (a server without a default sink, as on a machine
	// without audio devices).
	Sink string
	// Anonymous lets any client that reaches the socket in, without the
	// server's cookie. Only safe when the directory given to Start
	// is reachable by its owner alone (0700): its mode is then the lock.
	Anonymous bool
}

// Server is a private PulseAudio that Start started.
type Server struct {
	// Addr is the server's address ("unix:/path"), for PULSE_SERVER or
	// audio.Options.Server.
	Addr string
	// Sink is the default sink's name ("" without one).
	Sink string
	// Cookie is the file of the server's cookie (what a client needs
	// unless Anonymous).
	Cookie string

	dir    string
	leader *procgroup.Leader
	exited chan struct{}
	output *capped.Buffer
	stop   sync.Once
}

// Available reports whether pulseaudio is installed.
func Available() bool {
	_, err := exec.LookPath("pulseaudio")
	return err == nil
}

// Start starts a private PulseAudio whose files (runtime, state,
// config, cookie, socket) all live in dir, an existing directory the
// caller owns and removes after Close. It returns once the server takes
// connections; ctx bounds the start only.
func Start(ctx context.Context, dir string, opts Options) (*Server, error) {
	bin, err := exec.LookPath("pulseaudio")
	if err != nil {
		return nil, fmt.Errorf("pulseaudio is not installed (apt-get install pulseaudio): %w", err)
	}
	socket := filepath.Join(dir, "native")
	if len(socket) > maxSocketPath {
		return nil, fmt.Errorf("the socket's path %s is longer than a unix socket's %d bytes", socket, maxSocketPath)
	}
	for _, sub := range []string{"run", "state", "config"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
	}
	s := &Server{
		Addr:   "unix:" + socket,
		Sink:   opts.Sink,
		Cookie: filepath.Join(dir, "cookie"),
		dir:    dir,
		exited: make(chan struct{}),
		output: &capped.Buffer{Max: serverLogMax},
	}
	var script strings.Builder
	if opts.Sink != "" {
		fmt.Fprintf(&script, "load-module module-null-sink sink_name=%s format=s16le rate=%d channels=%d sink_properties=device.description=%s\n",
			opts.Sink, SampleRate, Channels, opts.Sink)
		fmt.Fprintf(&script, "set-default-sink %s\n", opts.Sink)
	}
	auth := "auth-cookie=" + s.Cookie
	if opts.Anonymous {
		auth = "auth-anonymous=1"
	}
	// Last: a client that reaches the socket finds the sink in place.
	fmt.Fprintf(&script, "load-module module-native-protocol-unix socket=%s %s\n", socket, auth)
	scriptPath := filepath.Join(dir, "script.pa")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o600); err != nil {
		return nil, err
	}
	// A client that cannot reach the server must fail, not start one.
	if err := os.WriteFile(filepath.Join(dir, "client.conf"), []byte("autospawn = no\n"), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"-n", "--file="+scriptPath, // no default.pa: only what the script loads
		"--daemonize=no", "--use-pid-file=no", "--system=no",
		"--exit-idle-time=-1",
		// No rtkit (over the system bus), no CPU-time watchdog, which
		// kills a server starved on a loaded machine.
		"--realtime=no", "--high-priority=no", "--no-cpu-limit=yes",
		"--log-target=stderr", "--log-level=notice")
	cmd.Env = s.env(false)
	cmd.Dir = dir
	cmd.Stdout = s.output
	cmd.Stderr = s.output
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start pulseaudio: %w", err)
	}
	s.leader = procgroup.New(cmd.Process.Pid)
	go func() { _ = s.leader.Reap(cmd.Wait); close(s.exited) }()
	if err := s.waitReady(ctx, socket); err != nil {
		s.Close()
		return nil, fmt.Errorf("pulseaudio: %w: %s", err, bytes.TrimSpace([]byte(s.Log())))
	}
	return s, nil
}

// waitReady waits until the socket takes a connection: the script loads
// the protocol module last, so the server is then ready.
func (s *Server) waitReady(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("unix", socket, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before its socket %s took a connection", socket)
		case <-ctx.Done():
			return fmt.Errorf("socket %s took no connection within %v: %w", socket, serverStartTimeout, err)
		case <-tick.C:
		}
	}
}

// env is the environment of the server (client false) or of a client of
// it: everything under the server's directory, no D-Bus, no display.
func (s *Server) env(client bool) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"LANG=C",
		"HOME=" + s.dir,
		"XDG_RUNTIME_DIR=" + filepath.Join(s.dir, "run"),
		"XDG_CONFIG_HOME=" + filepath.Join(s.dir, "config"),
		"PULSE_RUNTIME_PATH=" + filepath.Join(s.dir, "run"),
		"PULSE_STATE_PATH=" + filepath.Join(s.dir, "state"),
		"PULSE_CLIENTCONFIG=" + filepath.Join(s.dir, "client.conf"),
		// A bus address that answers nothing: libdbus would otherwise
		// try to autolaunch a session bus, which outlives the server.
		"DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(s.dir, "no-dbus"),
	}
	if client {
		env = append(env, "PULSE_SERVER="+s.Addr, "PULSE_COOKIE="+s.Cookie)
	}
	return env
}

// ClientEnv is the environment a client of this server runs in (paplay,
// pactl): PULSE_SERVER, PULSE_COOKIE, and private HOME and XDG_RUNTIME_DIR.
func (s *Server) ClientEnv() []string { return s.env(true) }

// PID is the server's process id.
func (s *Server) PID() int { return s.leader.PID() }

// Log is what the server wrote to stderr so far (its first 64 KiB).
func (s *Server) Log() string { return s.output.String() }

// Kill kills the server at once (SIGKILL) and waits for it to exit, as a
// sound server that crashes: its clients see the connection drop.
func (s *Server) Kill() {
	s.stop.Do(func() {
		_ = s.leader.Signal(syscall.SIGKILL, true)
		<-s.exited
	})
}

// Close stops the server (SIGTERM, then SIGKILL if it lingers) and waits
// for it to exit. The signals go through procgroup, which refuses them
// once the server was reaped.
func (s *Server) Close() {
	s.stop.Do(func() {
		_ = s.leader.Signal(syscall.SIGTERM, true)
		select {
		case <-s.exited:
		case <-time.After(serverStopTimeout):
			_ = s.leader.Signal(syscall.SIGKILL, true)
			<-s.exited
		}
	})
}
