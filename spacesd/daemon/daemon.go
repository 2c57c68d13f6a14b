// Package daemon assembles cua-spacesd: the capabilities, the services
// that serve them over HTTP, and the server that mounts the services. The
// program (spacesd/main.go) and the test daemon (spacesdtest) both build it
// here, so a test runs the daemon a user runs.
package daemon

import (
	"log/slog"

	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/desktopsvc"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/procsvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// Options configure a daemon.
type Options struct {
	Version string
	// Auth decides who may call; nil means no token (loopback only).
	Auth   *server.Auth
	Logger *slog.Logger
	// Display is the X display for the desktop features ("" = none).
	Display string
	// Process adjusts the process manager (limits, clock).
	Process process.Options
	// Files adjusts the files service (its state directory).
	Files filesvc.Options
	// Stream says where the streams' media travels (UDP port, ICE-TCP, NAT).
	Stream streamsvc.Options
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
	procs := process.NewManager(po)
	desk := desktop.New(desktop.Options{Display: o.Display, Logger: o.Logger.With("capability", "desktop")})
	return server.New(server.Config{
		Version: o.Version,
		Auth:    o.Auth,
		Logger:  o.Logger,
		Display: o.Display,
		Services: []server.NewService{
			procsvc.New(procs),
			filesvc.New(o.Files),
			desktopsvc.New(desk),
			// After the desktop service, which owns desk: services close in
			// reverse order, so the streams end before the display goes.
			streamsvc.New(desk, o.Stream),
		},
	})
}
