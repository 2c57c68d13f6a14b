package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// Presence is the directory's answer for a computer: the node that holds
// its session, and what that node tells of it.
type Presence struct {
	Node    string `json:"node"`
	SinceMS int64  `json:"since_ms,omitempty"`
	Daemon  string `json:"daemon,omitempty"`
	// Connected are the shared people with a stream open to it now.
	Connected []string `json:"connected,omitempty"`
}

// maxPresenceSize bounds a directory answer.
const maxPresenceSize = 16 << 10

// serveDirectory answers the directory's requests: this node's name and
// what Options.Presence adds.
func (m *Mesh) serveDirectory() {
	for {
		select {
		case msg := <-m.dirCh:
			p := Presence{Node: m.o.Node}
			if m.o.Presence != nil {
				p = m.o.Presence(strings.TrimPrefix(msg.Subject, subjComputer))
				p.Node = m.o.Node
			}
			b, err := json.Marshal(p)
			if err != nil || len(b) > maxPresenceSize {
				b, _ = json.Marshal(Presence{Node: m.o.Node, SinceMS: p.SinceMS})
			}
			_ = msg.Respond(b)
		case <-m.done:
			return
		}
	}
}

// ParsePresence reads a directory answer.
func ParsePresence(b []byte) (Presence, error) {
	var p Presence
	if len(b) > maxPresenceSize {
		return p, api.Errorf(api.KindInvalidArgument, "presence: %d bytes, over %d", len(b), maxPresenceSize)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return Presence{}, api.Errorf(api.KindInvalidArgument, "presence: %v", err)
	}
	if err := CheckNode(p.Node); err != nil {
		return Presence{}, err
	}
	return p, nil
}

// Locate answers the node that holds computer's session, or ErrOffline.
// When two do (a Space that redialled before its old node noticed), the
// first to answer wins; the new session's notice ends the old one.
func (m *Mesh) Locate(ctx context.Context, computer string) (Presence, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, LocateTimeout)
		defer cancel()
	}
	msg, err := m.nc.RequestWithContext(ctx, subjComputer+computer, nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return Presence{}, ErrOffline
	case err != nil:
		return Presence{}, api.Errorf(api.KindRelay, "mesh: locate %q: %w", computer, err)
	}
	p, err := ParsePresence(msg.Data)
	if err != nil {
		return Presence{}, api.Errorf(api.KindRelay, "mesh: locate %q: %w", computer, err)
	}
	return p, nil
}
