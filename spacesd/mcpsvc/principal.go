package mcpsvc

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// maxPrincipalClients bounds the principals' clients kept: one per person,
// role and token generation seen, a handful in a team's use. Past it one
// is let go (its calls in flight finish; see principalClient.let).
const maxPrincipalClients = 16

// principalKey names a principal's client: a person with a new role (shared
// again) or after a rotation gets a new one, never the old role's.
type principalKey struct {
	person string
	role   server.Role
	gen    uint64
}

// principalClient is a client of the daemon whose every connection the
// daemon serves as one principal (server.Host.ServeConn). It lives as
// long as the person's access does: a kick of the person (or a rotation
// of the token it was made under) closes its connections, so every inner
// call in flight ends, and refuses its next dials; the cache lets it go.
type principalClient struct {
	key principalKey
	p   server.Principal
	c   *client.Client
	// ctx is the principal's hold (server.Host.Hold): it ends with the
	// person's kick, the token's rotation, or end.
	ctx context.Context
	end context.CancelCauseFunc

	mu    sync.Mutex
	conns map[*heldConn]struct{}
	// evicted: the cache let it go; it ends once its last connection
	// closes, so that no call of it in flight is cut.
	evicted bool
}

// principal is the client that acts as c's principal, made on first use.
func (s *self) principal(c server.Caller) (*client.Client, error) {
	p := *c.Principal
	key := principalKey{person: p.Person, role: p.Role, gen: c.Generation}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, api.Errorf(api.KindSpacesdNotAvailable, "%v", server.ErrShutdown).WithRetryable(true)
	}
	if pc, ok := s.principals[key]; ok {
		return pc.c, nil
	}
	pc := &principalClient{key: key, p: p, conns: map[*heldConn]struct{}{}}
	pc.ctx, pc.end = s.hold(context.Background(), server.Caller{Generation: c.Generation, Principal: &p})
	cl, err := client.New(selfURL, "", client.WithDialer(pc.dial(s.serveConn)))
	if err != nil {
		pc.end(err)
		return nil, err
	}
	pc.c = cl
	if len(s.principals) >= maxPrincipalClients {
		for k, old := range s.principals {
			delete(s.principals, k)
			old.let()
			break
		}
	}
	s.principals[key] = pc
	context.AfterFunc(pc.ctx, func() {
		// Kicked, rotated or let go: no later call finds it.
		s.mu.Lock()
		if s.principals[key] == pc {
			delete(s.principals, key)
		}
		s.mu.Unlock()
		pc.closeConns()
	})
	return cl, nil
}

// dial is the client's dialer: an in-memory connection that serveConn
// serves as the principal, tracked so that the principal's end closes it.
func (pc *principalClient) dial(serveConn func(net.Conn, server.Principal) error) client.Dialer {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		if err := pc.gone(); err != nil {
			return nil, err
		}
		mine, theirs := net.Pipe()
		hc := &heldConn{Conn: mine, pc: pc}
		pc.mu.Lock()
		pc.conns[hc] = struct{}{}
		pc.mu.Unlock()
		// Added before the check: an end between the two closes it.
		if err := pc.gone(); err != nil {
			_ = hc.Close()
			return nil, err
		}
		if err := serveConn(theirs, pc.p); err != nil {
			_ = hc.Close()
			return nil, err
		}
		return hc, nil
	}
}

// gone is why the principal's client may dial no more, nil while it may.
func (pc *principalClient) gone() error {
	if pc.ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(pc.ctx)
	if e := (*api.Error)(nil); errors.As(cause, &e) {
		return e // ErrKicked: permission_denied, as the person's own calls answer
	}
	return api.Errorf(api.KindUnauthenticated, "%v", cause).WithCause(cause)
}

// let lets the client go from the cache: it ends now if it holds no
// connection, else when its last one closes. Its idle ones stay for a
// call in flight's next request, until the transport's idle timeout
// closes them.
func (pc *principalClient) let() {
	pc.mu.Lock()
	pc.evicted = true
	pc.mu.Unlock()
	pc.endIfUnused()
}

func (pc *principalClient) endIfUnused() {
	pc.mu.Lock()
	done := pc.evicted && len(pc.conns) == 0
	pc.mu.Unlock()
	if done {
		pc.end(nil)
	}
}

func (pc *principalClient) closeConns() {
	pc.mu.Lock()
	out := make([]*heldConn, 0, len(pc.conns))
	for c := range pc.conns {
		out = append(out, c)
	}
	pc.mu.Unlock()
	for _, c := range out {
		_ = c.Close()
	}
}

// heldConn is the client's end of a principal's connection.
type heldConn struct {
	net.Conn
	pc   *principalClient
	once sync.Once
}

func (c *heldConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.pc.mu.Lock()
		delete(c.pc.conns, c)
		c.pc.mu.Unlock()
		c.pc.endIfUnused()
	})
	return err
}
