package a11y

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/godbus/dbus/v5"
)

// maxBusAddressBytes bounds the AT_SPI_BUS property read.
const maxBusAddressBytes = 4096

// connect finds the accessibility bus as AT-SPI clients do (Options'
// BusAddress, the display's AT_SPI_BUS, the session bus's org.a11y.Bus)
// and connects to it, within connectTimeout.
func (a *A11y) connect(ctx context.Context) (*dbus.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	addr := a.opts.BusAddress
	var whyNot []error
	if addr == "" && a.opts.Display != "" {
		var err error
		if addr, err = a.desk.RootProperty(ctx, "AT_SPI_BUS", maxBusAddressBytes); err != nil {
			whyNot = append(whyNot, err)
		}
	}
	if addr == "" {
		var err error
		if addr, err = sessionBusA11yAddress(ctx, a.opts.SessionBusAddress); err != nil {
			whyNot = append(whyNot, err)
		}
	}
	if addr == "" {
		return nil, errors.Join(whyNot...)
	}
	return dialBus(ctx, addr)
}

// dialBus connects to a bus and says hello, within ctx.
func dialBus(ctx context.Context, addr string) (*dbus.Conn, error) {
	type result struct {
		c   *dbus.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := dbus.Connect(addr)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("connect to bus %s: %w", addr, r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, fmt.Errorf("connect to bus %s: %w", addr, ctx.Err())
	}
}

// sessionBusA11yAddress asks the session bus's org.a11y.Bus for the
// accessibility bus.
func sessionBusA11yAddress(ctx context.Context, session string) (string, error) {
	if session == "" {
		session = os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	}
	if session == "" {
		return "", errors.New("no session bus (DBUS_SESSION_BUS_ADDRESS is empty)")
	}
	c, err := dialBus(ctx, session)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var addr string
	err = c.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr)
	if err != nil {
		return "", fmt.Errorf("session bus org.a11y.Bus.GetAddress: %w", err)
	}
	return addr, nil
}
