// Command cua-spacesd is the guest daemon baked into every Space: it exposes
// the guest's shell, processes, files and desktop over HTTP to the bridge.
//
//	cua-spacesd [serve] [--listen ADDR] [--token-file FILE]   serve (default)
//	cua-spacesd doctor [--json]                               check this guest
//	cua-spacesd selftest [--json]                             prove the video and audio encoders here
//	cua-spacesd fingerprint [--state-dir D | --tls-cert F]    the TLS certificate's sha256
//	cua-spacesd version                                       print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ybus"
	"github.com/trycua/cua-spacesd/capabilities/audio/pulseserver"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/cgroup"
	"github.com/trycua/cua-spacesd/spacesd/daemon"
	"github.com/trycua/cua-spacesd/spacesd/doctor"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// version is set at link time (-X main.version=...).
var version = "dev"

// tokenEnv is the environment variable a token may come from. The daemon
// re-executes itself without it (envtoken.go), so that neither a child nor
// /proc/<pid>/environ has it.
const tokenEnv = "CUA_SPACESD_TOKEN"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, stdout, stderr)
	case "fingerprint":
		return fingerprintMain(args, stdout, stderr)
	case "doctor":
		return doctor.Main(args, stdout, stderr, version)
	case "selftest":
		return doctor.SelfTestMain(args, stdout, stderr, version)
	case "version", "--version":
		fmt.Fprintf(stdout, "cua-spacesd %s (protocol %d)\n", version, api.ProtocolVersion)
		return 0
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, "usage: cua-spacesd [serve|doctor|selftest|fingerprint|version] [flags]; cua-spacesd serve -h lists the flags")
		return 0
	}
	fmt.Fprintf(stderr, "cua-spacesd: unknown command %q (serve, doctor, selftest, fingerprint, version)\n", cmd)
	return 2
}

func serve(args []string, stdout, stderr io.Writer) int {
	return serveWith(context.Background(), args, stdout, stderr, streamsvc.DefaultMediaPort)
}

// serveWith is serve until ctx ends (or a signal comes), with
// defaultMediaPort as --media-port's default: a test holds a port and makes
// it the default, since the real default may be anyone's on a shared machine.
func serveWith(ctx context.Context, args []string, stdout, stderr io.Writer, defaultMediaPort int) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "address to listen on (default 0.0.0.0:3211 with a token, 127.0.0.1:3211 without)")
	token := fs.String("token", "", "bearer token (prefer --token-file or "+tokenEnv+": flags show in ps)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token; changes rotate it and end old sessions")
	display := fs.String("display", os.Getenv("DISPLAY"), "X display for the desktop features")
	xvfb := fs.Bool("xvfb", false, "without a display, start a private Xvfb + openbox for the desktop features")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	mcpConfig := fs.String("mcp-config", "", "file declaring the image's MCP services (JSON, mcpServers), reached through the mcp tools list_tools and call_tool")
	stateDir := fs.String("state-dir", filesvc.DefaultStateDir(), "where unfinished uploads and temp files are recorded, to survive a restart, the --tls-self-signed pair is kept, and the relay attachment (\"\" = nowhere)")
	var po process.Options
	fs.StringVar(&po.Containment, "containment", process.ContainmentAuto,
		"auto: each process tree in a cgroup of its own where cgroups are writable; off: process groups only")
	fs.Func("process-pids-max", "tasks (processes and threads) one process tree may hold: a number, or max (default: 4096)", limitFlag(&po.TreePidsMax, parseCount))
	fs.Func("process-memory-max", "memory one process tree may use: bytes or 512M, 4G..., or max (default: RAM less a reserve)", limitFlag(&po.TreeMemoryMax, cgroup.ParseSize))
	fs.Func("children-pids-max", "tasks all process trees together may hold (default: 3/4 of the smaller of pid_max and threads-max)", limitFlag(&po.ChildrenPidsMax, parseCount))
	fs.Func("children-memory-max", "memory all process trees together may use (default: RAM less the larger of 512M and RAM/8)", limitFlag(&po.ChildrenMemoryMax, cgroup.ParseSize))
	media := mediaFlags(fs, defaultMediaPort)
	tlsf := newTLSFlags(fs)
	relayf := newRelayFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := relayf.check(); err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: %v\n", err)
		return 2
	}
	if err := tlsf.check(); err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: %v\n", err)
		return 2
	}
	if po.Containment != process.ContainmentAuto && po.Containment != process.ContainmentOff {
		fmt.Fprintf(stderr, "cua-spacesd: --containment %q: want auto or off\n", po.Containment)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: --log-level %q: %v\n", *logLevel, err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Before anything can start a child: only stdin, stdout and stderr
	// (and, across the re-execution, the token pipe) are passed on.
	if err := closeInheritedOnExec(); err != nil {
		log.Warn("inherited descriptors stay open in the processes the daemon starts", "err", err)
	}

	envToken, err := takeEnvToken(log) // may re-execute the daemon (envtoken.go)
	if err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: %v\n", err)
		return 2
	}
	auth, err := buildAuth(*token, *tokenFile, envToken, log)
	if err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: %v\n", err)
		return 2
	}
	addr, err := listenAddr(*listen, auth.Required())
	if err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: %v\n", err)
		return 2
	}
	var mcpOpts mcpsvc.Options
	if *mcpConfig != "" {
		if mcpOpts.Config, err = mcpsvc.LoadConfig(*mcpConfig); err != nil {
			fmt.Fprintf(stderr, "cua-spacesd: --mcp-config: %v\n", err)
			return 2
		}
	}
	tlsConfig, err := tlsf.config(*stateDir, addr, stdout, log)
	if err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: %v\n", err)
		return 1
	}
	var xauthority, pulseServer, sessionBus string
	if *xvfb && *display == "" {
		v, xauth, err := startVirtual(log)
		if err != nil {
			fmt.Fprintf(stderr, "cua-spacesd: --xvfb: %v\n", err)
			return 1
		}
		defer os.RemoveAll(filepath.Dir(xauth)) // after the display and the sound are gone
		defer v.Close()
		*display, xauthority = v.Display(), xauth
		log.Info("started a virtual display", "display", *display)
		if pa := startSound(filepath.Dir(xauth), log); pa != nil {
			defer pa.Close() // after the daemon's stream let go of it
			pulseServer = pa.Addr
		}
		if b := startA11yBus(filepath.Dir(xauth), *display, xauth, log); b != nil {
			defer b.Close() // after the daemon's a11y let go of it, before the display
			sessionBus = b.SessionAddr
		}
	}
	// Listen first: the media may take the port the listener got (--listen
	// PORT 0 included) when its default is taken.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "cua-spacesd: listen %s: %v\n", addr, err)
		return 1
	}
	srv, err := daemon.New(daemon.Options{Version: version, Auth: auth, Logger: log, Display: *display, Xauthority: xauthority,
		PulseServer: pulseServer, SessionBus: sessionBus, Process: po, Files: filesvc.Options{StateDir: *stateDir}, Stream: media.options(addr, ln.Addr().(*net.TCPAddr).Port), TLS: tlsConfig, MCP: mcpOpts,
		Relay: relayf.options(*stateDir, version)})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "cua-spacesd: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("cua-spacesd serving", "addr", ln.Addr().String(), "version", version, "auth", auth.Required(), "tls", tlsConfig != nil, "display", *display)
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, net.ErrClosed) {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// limitFlag sets *dst from a flag's value read by parse, where -1 means
// "not enforced" (the flag said max) and 0 is refused: a limit of nothing
// is a typo, and the default is had by leaving the flag out.
func limitFlag(dst *int64, parse func(string) (int64, error)) func(string) error {
	return func(s string) error {
		n, err := parse(s)
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("0 would allow nothing; give a positive value, or max for no limit")
		}
		*dst = n
		return nil
	}
}

// parseCount reads a count of tasks: a positive number, or max (-1).
func parseCount(s string) (int64, error) {
	if strings.EqualFold(strings.TrimSpace(s), "max") {
		return -1, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: want a number of tasks, or max", s)
	}
	return n, nil
}

// startVirtual starts the daemon's own Xvfb (and window manager) behind a
// fresh cookie, in a directory only the daemon's user can read: without
// one, any local user could watch the screen and type into it. The caller
// removes the cookie's directory once the display is closed.
func startVirtual(log *slog.Logger) (*desktop.Virtual, string, error) {
	dir, err := os.MkdirTemp("", "cua-spacesd-x-")
	if err != nil {
		return nil, "", err
	}
	xauth := filepath.Join(dir, "Xauthority")
	if err := desktop.WriteCookie(xauth); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("write the display's cookie: %w", err)
	}
	v, err := desktop.StartVirtual(context.Background(), desktop.VirtualOptions{Logger: log, Xauthority: xauth})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return v, xauth, nil
}

// startSound starts the sound of the daemon's own display (--xvfb): a
// private PulseAudio with a null sink "cua" as its default sink, in a
// directory beside the display's cookie (a 0700 one inside dir). Its
// socket lets clients in without a cookie (auth-anonymous): the
// directories' modes already keep out every user but the daemon's, as
// for the display's cookie. It answers nil, and the daemon runs on
// without sound (desktop_audio says why), when the daemon was given a
// sound server (PULSE_SERVER), when pulseaudio is not installed, or when
// it does not start.
func startSound(dir string, log *slog.Logger) *pulseserver.Server {
	if os.Getenv("PULSE_SERVER") != "" {
		log.Info("--xvfb: using the sound server of PULSE_SERVER", "pulse_server", os.Getenv("PULSE_SERVER"))
		return nil
	}
	if !pulseserver.Available() {
		log.Warn("--xvfb: no sound: pulseaudio is not installed (apt-get install pulseaudio)")
		return nil
	}
	sound := filepath.Join(dir, "pulse")
	if err := os.Mkdir(sound, 0o700); err != nil {
		log.Warn("--xvfb: no sound", "err", err)
		return nil
	}
	pa, err := pulseserver.Start(context.Background(), sound, pulseserver.Options{Sink: soundSink, Anonymous: true})
	if err != nil {
		log.Warn("--xvfb: no sound: the sound server did not start", "err", err)
		return nil
	}
	log.Info("started a sound server", "pulse_server", pa.Addr, "sink", pa.Sink)
	return pa
}

// soundSink is the null sink of the daemon's own sound server (--xvfb).
const soundSink = "cua"

// startA11yBus starts the accessibility of the daemon's own display
// (--xvfb): a private D-Bus session bus, its socket in a 0700 directory
// beside the display's cookie, and the accessibility bus on it
// (at-spi-bus-launcher, which sets AT_SPI_BUS on the display's root
// window). The daemon's children get the session bus and the toolkits'
// accessibility switches, so that their apps expose their widgets there.
// It is the display's own even when the daemon was given a session bus
// (DBUS_SESSION_BUS_ADDRESS): that one's accessibility bus is another
// display's. It answers nil, and the daemon runs on without it (a11y
// says why), when dbus-daemon or at-spi-bus-launcher is not installed or
// does not start.
func startA11yBus(dir, display, xauth string, log *slog.Logger) *a11ybus.Bus {
	if err := a11ybus.Available(); err != nil {
		log.Warn("--xvfb: no accessibility bus: "+err.Error(), "err", err)
		return nil
	}
	busDir := filepath.Join(dir, "a11y")
	if err := os.Mkdir(busDir, 0o700); err != nil {
		log.Warn("--xvfb: no accessibility bus", "err", err)
		return nil
	}
	env := append(process.BaseEnv(), "XAUTHORITY="+xauth)
	b, err := a11ybus.Start(context.Background(), busDir, display, env)
	if err != nil {
		log.Warn("--xvfb: no accessibility bus: it did not start", "err", err)
		return nil
	}
	log.Info("started an accessibility bus", "session_bus", b.SessionAddr, "a11y_bus", b.A11yAddr)
	return b
}

// buildAuth picks the token source: at most one of flag, file and env.
func buildAuth(flagToken, file, envToken string, log *slog.Logger) (*server.Auth, error) {
	n := 0
	for _, s := range []string{flagToken, file, envToken} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("give the token one way only: --token, --token-file or " + tokenEnv)
	}
	if file != "" {
		return server.NewFileAuth(file, log)
	}
	return server.NewAuth(flagToken+envToken, log), nil
}

// listenAddr applies the default bind and refuses a non-loopback bind
// without a token: an open shell on the network is never a default.
func listenAddr(listen string, hasToken bool) (string, error) {
	if listen == "" {
		host := "127.0.0.1"
		if hasToken {
			host = "0.0.0.0"
		}
		return net.JoinHostPort(host, strconv.Itoa(api.DefaultPort)), nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--listen %q: %v (want HOST:PORT)", listen, err)
	}
	if hasToken {
		return listen, nil
	}
	if host == "localhost" {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("refusing to listen on %q without a token: give --token-file (or %s), or bind 127.0.0.1", listen, tokenEnv)
	}
	return listen, nil
}
