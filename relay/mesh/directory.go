package mesh

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trycua/cua-spacesd/api"
)

// LocateTimeout bounds a directory request when the caller's context has
// no deadline: a node answers from memory, at once.
const LocateTimeout = 2 * time.Second

// ErrOffline is Locate's answer for a computer no node holds.
var ErrOffline = errors.New("mesh: no node holds the computer")

// Announce makes this node the answer to Locate(computer) until stop is
// called: the directory is one subscription per attached computer, served
// by one goroutine for all of them (no goroutine per computer).
func (m *Mesh) Announce(computer string) (stop func(), err error) {
	sub, err := m.nc.ChanSubscribe(subjComputer+computer, m.dirCh)
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "mesh: announce %q: %w", computer, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// serveDirectory answers the directory's requests with this node's name.
func (m *Mesh) serveDirectory() {
	node := []byte(m.o.Node)
	for {
		select {
		case msg := <-m.dirCh:
			_ = msg.Respond(node)
		case <-m.done:
			return
		}
	}
}

// Locate answers the node that holds computer's session, or ErrOffline.
// When two do (a Space that redialled before its old node noticed), the
// first to answer wins; the new session's notice ends the old one.
func (m *Mesh) Locate(ctx context.Context, computer string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, LocateTimeout)
		defer cancel()
	}
	msg, err := m.nc.RequestWithContext(ctx, subjComputer+computer, nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return "", ErrOffline
	case err != nil:
		return "", api.Errorf(api.KindRelay, "mesh: locate %q: %w", computer, err)
	}
	node := string(msg.Data)
	if CheckNode(node) != nil {
		return "", api.Errorf(api.KindRelay, "mesh: locate %q: a bad answer", computer)
	}
	return node, nil
}
