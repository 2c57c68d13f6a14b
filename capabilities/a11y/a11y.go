// Package a11y is the accessibility capability of cua-spacesd: the widget
// tree of a window, read, searched and acted on through AT-SPI2 over D-Bus
// (godbus/dbus, pure Go, no cgo). It is usable without HTTP.
//
// An A11y connects lazily, on the first call that needs the accessibility
// bus, and reconnects when that connection dies. It never sends synthetic
// input: every action is one the toolkit itself offers over AT-SPI.
package a11y

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
)

// Time bounds of the accessibility calls.
const (
	// probeTimeout bounds Probe: finding and pinging the bus.
	probeTimeout = time.Second
	// connectTimeout bounds finding the bus and connecting to it.
	connectTimeout = 2 * time.Second
	// callTimeout bounds one D-Bus call to an application: past it the
	// application is taken as hung for the rest of the walk.
	callTimeout = 500 * time.Millisecond
	// walkTimeout bounds one Tree or Find call as a whole.
	walkTimeout = 5 * time.Second
	// actTimeout bounds one Act call.
	actTimeout = 3 * time.Second
)

// limitationNoBus is the one sentence of capability_missing.
const limitationNoBus = "no accessibility bus: start at-spi-bus-launcher (at-spi2-core) in the desktop session, or run cua-spacesd with --xvfb"

// Options configure an A11y.
type Options struct {
	// Display is the X display (":0"), for the AT_SPI_BUS root window
	// property and to map X window ids to accessible frames; "" = none.
	Display string
	// Xauthority is the display's cookie file ("" = the X convention).
	Xauthority string
	// BusAddress is the accessibility bus, overriding the discovery.
	BusAddress string
	// SessionBusAddress is the session bus asked for org.a11y.Bus when
	// the display has no AT_SPI_BUS; "" = $DBUS_SESSION_BUS_ADDRESS.
	SessionBusAddress string
	Logger            *slog.Logger
}

// A11y is the accessibility of one desktop session. It is safe for
// concurrent use.
type A11y struct {
	opts Options
	log  *slog.Logger
	desk *desktop.Desktop

	// mu guards conn; it is a channel so a caller waiting behind a slow
	// connect gives up with its own context.
	mu   chan struct{}
	conn *dbus.Conn

	snaps *snapshots
}

// New returns the accessibility of the session Options describe; it
// connects on first use.
func New(opts Options) *A11y {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &A11y{opts: opts, log: logger, mu: make(chan struct{}, 1), snaps: newSnapshots()}
	if opts.Display != "" {
		a.desk = desktop.New(desktop.Options{Display: opts.Display, Xauthority: opts.Xauthority, Logger: logger})
	}
	return a
}

// Close drops the connections.
func (a *A11y) Close() {
	a.mu <- struct{}{}
	defer func() { <-a.mu }()
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
	if a.desk != nil {
		a.desk.Close()
	}
}

// Probe says whether the accessibility bus answers: nil, or
// capability_missing with the sentence that says how to get it.
func (a *A11y) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := a.bus(ctx)
	if err != nil {
		return err
	}
	var n int32
	if err := getProp(ctx, c, registryName, rootPath, ifaceAccessible, "ChildCount", &n); err != nil {
		a.log.Debug("a11y: registry does not answer", "err", err)
		return api.CapabilityMissing(api.FeatureA11y, limitationNoBus).WithCause(err)
	}
	return nil
}

// Status is the a11y feature's status for the capabilities answer.
func (a *A11y) Status(ctx context.Context) api.FeatureStatus {
	if err := a.Probe(ctx); err != nil {
		var e *api.Error
		if errors.As(err, &e) && e.Limitation != "" {
			return api.FeatureStatus{Limitation: e.Limitation}
		}
		return api.FeatureStatus{Limitation: limitationNoBus}
	}
	return api.FeatureStatus{Supported: true}
}

// bus answers the connection to the accessibility bus, connecting when
// there is none or the last one died.
func (a *A11y) bus(ctx context.Context) (*dbus.Conn, error) {
	select {
	case a.mu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctxError(ctx, "wait for the accessibility bus")
	}
	defer func() { <-a.mu }()
	if a.conn != nil && a.conn.Connected() {
		return a.conn, nil
	}
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
	c, err := a.connect(ctx)
	if err != nil {
		a.log.Debug("a11y: no accessibility bus", "err", err)
		return nil, api.CapabilityMissing(api.FeatureA11y, limitationNoBus).WithCause(err)
	}
	a.conn = c
	return c, nil
}

// ctxError is the error of a call its context ended.
func ctxError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return api.Errorf(api.KindTimeout, "%s: timed out", what)
	}
	return api.Errorf(api.KindCancelled, "%s: cancelled", what)
}

// connErr is a D-Bus call's error as an api error: a dead element or
// snapshot answers precondition_failed, a slow one timeout.
func connErr(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return api.Errorf(api.KindTimeout, "%s: the application did not answer in time", what).WithCause(err)
	}
	var de dbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.ServiceUnknown",
			"org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.UnknownMethod",
			"org.freedesktop.DBus.Error.NameHasNoOwner":
			return api.Errorf(api.KindPreconditionFailed, "%s: the element is gone; take the tree again", what).WithCause(err)
		}
	}
	return api.Errorf(api.KindEnv, "%s: %v", what, err).WithCause(err)
}
