// Package daemon assembles cua-spacesd: the capabilities, the services
// that serve them over HTTP, and the server that mounts the services. The
// program (spacesd/main.go) and the test daemon (spacesdtest) both build it
// here, so a test runs the daemon a user runs.
package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/trycua/cua-spacesd/capabilities/a11y"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/a11ysvc"
	"github.com/trycua/cua-spacesd/spacesd/compatsvc"
	"github.com/trycua/cua-spacesd/spacesd/desktopsvc"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
	"github.com/trycua/cua-spacesd/spacesd/procsvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// Options configure a daemon.
type Options struct {
	Version string
	// Auth decides who may call; nil means no token (loopback only).
	Auth   *server.Auth
	Logger *slog.Logger
	// Display is the X display for the desktop features ("" = none); the
	// processes the daemon starts get it as DISPLAY unless they set one.
	Display string
	// Xauthority is the cookie file of Display when the daemon started
	// that display itself (--xvfb): the desktop and every child use it.
	Xauthority string
	// PulseServer is the address of the sound server the daemon started
	// beside its display (--xvfb), in PULSE_SERVER's syntax: the stream
	// captures it (unless Stream.Audio.Server says otherwise) and every
	// child gets it as PULSE_SERVER.
	PulseServer string
	// SessionBus is the address of the D-Bus session bus the daemon
	// started beside its display (--xvfb), with the accessibility bus on
	// it: every child gets it as DBUS_SESSION_BUS_ADDRESS, with the
	// toolkits' accessibility switches (process.Options.SessionBus).
	SessionBus string
	// Process adjusts the process manager (limits, containment, clock).
	Process process.Options
	// Files adjusts the files service (its state directory).
	Files filesvc.Options
	// Stream says where the streams' media travels (UDP port, ICE-TCP, NAT).
	Stream streamsvc.Options
	// TLS, when set, serves HTTPS and WSS (server.NewTLSConfig).
	TLS *tls.Config
	// AuthFailurePause replaces the pause of a refused credential (see
	// server.Config); nil keeps server.AuthFailureDelay.
	AuthFailurePause func(context.Context)
	// MCP declares the image's MCP services (its Version defaults to Version).
	MCP mcpsvc.Options
	// Now is the clock of the idempotency keys (server.Config); nil is
	// time.Now.
	Now func() time.Time
	// Relay attaches the Space to a cua-relay (relay_attach): the --relay
	// flags, and the state dir the attachment is kept in (default
	// Files.StateDir).
	Relay relaysvc.Options
}

// New builds the daemon's server with every service.
func New(o Options) (*server.Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	po := o.Process
	if po.Logger == nil {
		po.Logger = o.Logger.With("capability", "process")
	}
	if po.Display == "" {
		po.Display = o.Display
	}
	if po.Xauthority == "" {
		po.Xauthority = o.Xauthority
	}
	if po.PulseServer == "" {
		po.PulseServer = o.PulseServer
	}
	if po.SessionBus == "" {
		po.SessionBus = o.SessionBus
	}
	if o.Stream.Audio.Server == "" {
		o.Stream.Audio.Server = o.PulseServer
	}
	procs := process.NewManager(po)
	if o.MCP.Version == "" {
		o.MCP.Version = o.Version
	}
	desk := desktop.New(desktop.Options{
		Display:    o.Display,
		Xauthority: o.Xauthority,
		Logger:     o.Logger.With("capability", "desktop"),
		Launcher:   appLauncher{procs},
	})
	acc := a11y.New(a11y.Options{Display: o.Display, Xauthority: o.Xauthority, SessionBusAddress: o.SessionBus,
		Logger: o.Logger.With("capability", "a11y")})
	if o.Relay.StateDir == "" {
		o.Relay.StateDir = o.Files.StateDir
	}
	if o.Relay.Version == "" {
		o.Relay.Version = o.Version
	}
	if o.Relay.Logger == nil {
		o.Relay.Logger = o.Logger.With("capability", "relay")
	}
	return server.New(server.Config{
		Version: o.Version,
		Auth:    o.Auth,
		Logger:  o.Logger,
		Display: o.Display,
		// AuthFailurePause: the test daemon refuses many tokens on purpose.
		AuthFailurePause: o.AuthFailurePause,
		TLS:              o.TLS,
		Now:              o.Now,
		Services: []server.NewService{
			procsvc.New(procs),
			filesvc.New(o.Files),
			desktopsvc.New(desk),
			// After the desktop service, which owns desk: services close in
			// reverse order, so the streams end before the display goes.
			streamsvc.New(desk, o.Stream),
			// The accessibility tree, over the display's accessibility bus.
			a11ysvc.New(acc),
			// computer-server's bus over the same process manager and
			// desktop; closed before them (it releases what its clients held).
			compatsvc.New(procs, desk, acc, o.Version),
			// Last, so it closes first: its stdio services are processes
			// of procs, stopped gently before the manager kills the rest.
			mcpsvc.New(procs, o.MCP),
			// The relay's streams are served by the server like its
			// listener's; the attacher itself stops when it closes.
			relaysvc.New(o.Relay),
		},
	})
}

// appLauncher starts launch_app's apps as processes of the manager: each
// contained with everything it starts, listed (tag desktop.LaunchTag) and
// killable like any other process.
type appLauncher struct{ m *process.Manager }

func (l appLauncher) Launch(_ context.Context, app desktop.AppSpec) (desktop.LaunchedApp, error) {
	env := make(map[string]string, len(app.Env)+1)
	for k, v := range app.Env {
		env[k] = v
	}
	if _, set := env["DISPLAY"]; !set && app.Display != "" {
		env["DISPLAY"] = app.Display
	}
	p, err := l.m.Start(api.StartRequest{
		Command: api.Command{Argv: app.Argv, Env: env, Cwd: app.Cwd},
		Tag:     desktop.LaunchTag,
	})
	if err != nil {
		return nil, err
	}
	return launchedApp{p}, nil
}

type launchedApp struct{ p *process.Process }

func (a launchedApp) ID() string              { return a.p.ID() }
func (a launchedApp) PID() int                { return a.p.PID() }
func (a launchedApp) Holds(pid int) bool      { return a.p.Holds(pid) }
func (a launchedApp) Exited() <-chan struct{} { return a.p.LeaderExited() }

// Err says how the app's process ended, in os/exec's words.
func (a launchedApp) Err() error {
	switch code, sig := a.p.ExitStatus(); {
	case sig != "":
		return fmt.Errorf("signal: %s", sig)
	case code != 0:
		return fmt.Errorf("exit status %d", code)
	}
	return nil
}
