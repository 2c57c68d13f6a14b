package desktop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// replyTimeout bounds one exchange with the X server (a request and its
// reply, or a short batch of them). A healthy local server answers in
// microseconds; one that does not answer within this time is stopped,
// grabbed by another client (XGrabServer) or wedged, and the connection is
// given up: it is closed and the next call dials a new one.
const replyTimeout = 5 * time.Second

// do runs op, which sends requests and waits for their replies, so that the
// caller waits no longer than ctx allows and op no longer than replyTimeout.
//
// xgb's reply waits cannot be interrupted, so op runs in its own goroutine.
// When ctx ends first the caller is answered at once and op keeps running:
// a late reply still ends it. When op outlives replyTimeout the connection
// is declared broken and its socket closed, which ends every wait on it, so
// no goroutine stays behind.
func (x *xconn) do(ctx context.Context, what string, op func() error) error {
	if err := x.brokenErr(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return x.ctxErr(ctx, what)
	}
	done := make(chan error, 1)
	watchdog := time.AfterFunc(replyTimeout, func() {
		x.fail(fmt.Errorf("%s: no answer within %s", what, replyTimeout))
	})
	go func() {
		err := op()
		watchdog.Stop()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && x.brokenErr() != nil {
			return x.brokenErr() // op failed because the socket was closed
		}
		return err
	case <-x.broken:
		select {
		case err := <-done: // finished just as the connection was given up
			if err == nil {
				return nil
			}
		default:
		}
		// An error of op here is the closed socket's (EOF), not its own.
		return x.brokenErr()
	case <-ctx.Done():
		return x.ctxErr(ctx, what)
	}
}

// await is do for a single request whose reply is wanted.
func await[T any](ctx context.Context, x *xconn, what string, reply func() (T, error)) (T, error) {
	var v T
	err := x.do(ctx, what, func() error {
		var err error
		v, err = reply()
		return xerr(what, err)
	})
	if err != nil {
		var zero T
		return zero, err // v may still be written by the abandoned op
	}
	return v, nil
}

// ctxErr is the answer of a call whose own context ended while it waited
// for the X server: timeout for a deadline, cancelled otherwise.
func (x *xconn) ctxErr(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return api.Errorf(api.KindTimeout, "X display %s: %s: the request's deadline passed before the X server answered: %w", x.display, what, ctx.Err())
	}
	return api.Errorf(api.KindCancelled, "X display %s: %s: %w", x.display, what, ctx.Err())
}

// fail gives the connection up: it is marked broken, so that the next call
// dials a new one, and its socket is closed, so that every wait on it (and
// the event loop) ends now rather than when the server answers, if ever.
func (x *xconn) fail(why error) {
	x.failOnce.Do(func() {
		x.failWhy = why
		close(x.broken)
		x.log.Warn("X display stopped answering; dropping the connection", "display", x.display, "err", why)
		x.kill()
	})
}

// brokenErr is nil while the connection is usable, else the timeout error
// naming why it was given up.
func (x *xconn) brokenErr() error {
	select {
	case <-x.broken:
		return api.Errorf(api.KindTimeout, "X display %s did not answer (%v); the connection was dropped and the next call reconnects", x.display, x.failWhy)
	default:
		return nil
	}
}

// kill closes the socket under the connection, which the daemon dialled
// and owns. xgb's own Close is graceful: it sends a request and waits for
// its answer, which a stopped or grabbed server never gives, so it alone
// would leave xgb's goroutines blocked.
func (x *xconn) kill() {
	x.c.Close()
	_ = x.sock.Close()
}

// semaphore is a lock whose acquisition honours a context, for locks held
// across X round trips: a caller must not wait behind a stuck call beyond
// its own deadline.
type semaphore chan struct{}

func newSemaphore() semaphore { return make(semaphore, 1) }

func (s semaphore) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s semaphore) release() { <-s }

// failState is embedded in xconn.
type failState struct {
	broken   chan struct{} // closed by fail
	failOnce sync.Once
	failWhy  error    // set before broken is closed
	sock     net.Conn // the socket under the xgb connection
}
