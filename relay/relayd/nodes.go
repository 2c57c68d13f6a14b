package relayd

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/mesh"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// A computer's session lives on its home node, the one its Space attached
// to: every per-session rule (limits, tracking per person, kicks, data
// connections) is applied there. Another node that a caller reaches
// authenticates the caller as for a local computer, then opens a stream
// over the trunk to the home node (relay/mesh) and asks it for a stream of
// the Space's with the caller's grant; the home node applies the session's
// rules, opens it as a local request would, and splices the two. The
// asking node is a thin, authenticated splice.

const (
	// trunkOpenTimeout bounds an open request's round trip, the home
	// node's stream to its Space (or a data connection's dial) included.
	trunkOpenTimeout = DataDialTimeout + 5*time.Second
	// remoteIdle drops the pools of a remote computer nobody used for
	// this long.
	remoteIdle = 2 * idleStreamTimeout
	// spliceBuffer is each direction's buffer of a spliced stream.
	spliceBuffer = 64 << 10
)

// startMesh joins the data path between nodes when the store is one node
// of a cluster (a single node needs none).
func (s *Server) startMesh() error {
	if !s.cfg.Store.Clustered() {
		return nil
	}
	// The trunks' own connection (Store.NewConn): their bytes do not
	// queue the store's requests.
	nc, err := s.cfg.Store.NewConn("mesh")
	if err != nil {
		return err
	}
	m, err := mesh.New(mesh.Options{
		Conn: nc, Node: s.cfg.Node, Logger: s.log,
		Accept: s.acceptTrunk, Notice: s.onNotice, Presence: s.presence,
	})
	if err != nil {
		nc.Close()
		return err
	}
	s.mu.Lock()
	s.mesh = m
	s.mu.Unlock()
	return nil
}

// meshOf is the mesh, nil on a single node.
func (s *Server) meshOf() *mesh.Mesh {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mesh
}

// --- the home node ---

// acceptTrunk serves a stream another node opened: its open request, the
// session's rules, then the Space's stream spliced to it.
func (s *Server) acceptTrunk(peer string, c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(trunkOpenTimeout))
	req, err := mesh.ReadOpen(c)
	if err != nil {
		s.log.Warn("trunk: a bad open request", "peer", peer, "err", err)
		_ = mesh.WriteAnswer(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), trunkOpenTimeout)
	space, err := s.openForPeer(ctx, req)
	cancel()
	if err != nil {
		_ = mesh.WriteAnswer(c, err)
		return
	}
	defer space.Close()
	if err := mesh.WriteAnswer(c, nil); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	s.metrics.HomeStreams.Add(1)
	splice(c, space, &s.metrics.TrunkBytes)
}

// openForPeer opens the Space's stream an open request asks for, as a
// request on this node would: the same limits, the same tracking.
func (s *Server) openForPeer(ctx context.Context, req mesh.OpenRequest) (net.Conn, error) {
	ss := s.session(req.Computer)
	if ss == nil {
		return nil, errNotHere(req.Computer)
	}
	c := caller{id: req.Person, name: req.PersonName, role: req.Role}
	if c.link() {
		// The link rate is the home node's bucket: every link request
		// through another node opens a stream of its own (never pooled).
		if ok, _ := ss.links.take(s.clock.Now(), float64(s.cfg.Limits.LinkRate), s.cfg.Limits.LinkBurst); !ok {
			s.metrics.LinkRateLimited.Add(1)
			return nil, api.Errorf(api.KindLimitExceeded, "computer %q: more than %d link requests a second through the relay", req.Computer, s.cfg.Limits.LinkRate).
				WithReason(relayapi.ReasonRateLimited).WithRetryable(true).WithHint("retry after the Retry-After seconds")
		}
	}
	switch req.Kind {
	case mesh.KindData:
		return ss.openData(ctx, c)
	case mesh.KindOffer:
		return ss.openStream(c, s.turnCredential(req.Computer, "space"))
	default:
		return ss.openStream(c, nil)
	}
}

// reasonNotHere is the refusal of a home node that holds the computer no
// more: the asking node locates it again.
const reasonNotHere = "not_here"

func errNotHere(name string) error {
	return api.Errorf(api.KindRelay, "computer %q is not attached to this node", name).WithReason(reasonNotHere)
}

// splice copies both ways until either side ends, then closes both.
func splice(a, b net.Conn, counted *atomic.Int64) {
	var wg sync.WaitGroup
	wg.Go(func() {
		n, _ := io.CopyBuffer(a, b, make([]byte, spliceBuffer))
		counted.Add(n)
		_ = a.Close()
		_ = b.Close()
	})
	n, _ := io.CopyBuffer(b, a, make([]byte, spliceBuffer))
	counted.Add(n)
	_ = a.Close()
	_ = b.Close()
	wg.Wait()
}

// presence is the directory's answer for a computer attached here.
func (s *Server) presence(computer string) mesh.Presence {
	ss := s.session(computer)
	if ss == nil {
		return mesh.Presence{}
	}
	p := mesh.Presence{SinceMS: ss.since.UnixMilli(), Daemon: ss.daemon}
	for person := range ss.liveShared() {
		p.Connected = append(p.Connected, person)
	}
	return p
}

// --- notices: changes made here, for the node holding the session ---

// notify publishes n to the other nodes (a single node has none).
func (s *Server) notify(n mesh.Notice) {
	if m := s.meshOf(); m != nil {
		if err := m.Publish(n); err != nil {
			s.log.Warn("notice", "op", n.Op, "computer", n.Computer, "err", err)
		}
	}
}

// onNotice acts on another node's notice, when it concerns a session here.
func (s *Server) onNotice(n mesh.Notice) {
	if n.Op == mesh.OpRecheckPerson {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.recheckPersonHere(ctx, n.Person, n.Why)
		return
	}
	ss := s.session(n.Computer)
	if ss == nil {
		return
	}
	switch n.Op {
	case mesh.OpKick:
		ss.kick(n.Person, n.Why)
	case mesh.OpCut:
		ss.cut(n.Person, n.Why)
	case mesh.OpEnd:
		ss.end(n.Code, trimText(n.Why))
	case mesh.OpAttached:
		// The Space attached to another node since: this session is the
		// old one (a Space that redialled before this node saw it go).
		if ss.since.UnixMilli() <= n.SinceMS {
			ss.end(protocol.CloseReplaced, "a newer session of this computer attached to node "+trimText(n.From))
		}
	}
}

// --- the asking node ---

// remote is a computer attached to another node, as this node reaches it:
// its home when last asked, and the pools of streams to it per caller.
type remote struct {
	s    *Server
	name string

	mu         sync.Mutex
	node       string
	transports map[string]*http.Transport
	used       time.Time
}

// remoteFor is the remote of a computer attached to another node, or nil
// when no node holds it (or this node is no cluster's). A known remote is
// answered without asking the directory: its pooled streams need none,
// and a new stream asks anyway (remote.open).
func (s *Server) remoteFor(ctx context.Context, name string) *remote {
	m := s.meshOf()
	if m == nil {
		return nil
	}
	s.mu.Lock()
	r := s.remotes[name]
	s.mu.Unlock()
	if r != nil {
		r.touch()
		return r
	}
	p, err := m.Locate(ctx, name)
	if err != nil {
		if !errors.Is(err, mesh.ErrOffline) {
			s.log.Warn("locate", "computer", name, "err", err)
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r = s.remotes[name]; r == nil {
		r = &remote{s: s, name: name, node: p.Node, transports: map[string]*http.Transport{}, used: time.Now()}
		s.remotes[name] = r
	}
	return r
}

func (r *remote) touch() {
	r.mu.Lock()
	r.used = time.Now()
	r.mu.Unlock()
}

// transport is c's pool of streams to the computer (bulk: a data
// connection per exchange; a link holder's: a stream per request, so that
// each takes from the home node's link rate).
func (r *remote) transport(c caller, bulk bool) http.RoundTripper {
	key := c.id + "\x00" + string(c.role)
	if bulk {
		key += "\x00bulk"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.transports[key]; t != nil {
		return t
	}
	kind := mesh.KindHTTP
	if bulk {
		kind = mesh.KindData
	}
	t := r.newTransport(c, kind, bulk || c.link())
	r.transports[key] = t
	return t
}

// offerTransport carries one WHEP offer on a stream of its own; the home
// node mints the Space's TURN credential (its TURN is the one its Space
// reaches).
func (r *remote) offerTransport(c caller) *http.Transport {
	return r.newTransport(c, mesh.KindOffer, true)
}

func (r *remote) newTransport(c caller, kind mesh.StreamKind, once bool) *http.Transport {
	t := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return r.open(ctx, c, kind)
		},
		DisableKeepAlives:      once,
		MaxIdleConnsPerHost:    maxIdleStreams,
		IdleConnTimeout:        idleStreamTimeout,
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
	if kind == mesh.KindData {
		t.ReadBufferSize, t.WriteBufferSize = dataBufferSize, dataBufferSize
	}
	return t
}

// open opens a stream to the computer's Space through its home node,
// asked of the directory for each new stream (pooled streams ask nothing):
// a Space that moved, or a node that died, is found at once. A home that
// answers not_here (the Space left it since) is asked for again, once.
func (r *remote) open(ctx context.Context, c caller, kind mesh.StreamKind) (net.Conn, error) {
	for try := 0; ; try++ {
		node, err := r.locate(ctx)
		if err != nil {
			return nil, err
		}
		conn, err := r.openOn(ctx, node, c, kind)
		if err == nil || try > 0 || api.AsError(err).Reason != reasonNotHere {
			return conn, err
		}
	}
}

// locate asks the directory for the computer's home node; offline forgets
// the remote.
func (r *remote) locate(ctx context.Context) (string, error) {
	m := r.s.meshOf()
	if m == nil {
		return "", offline(r.name)
	}
	p, err := m.Locate(ctx, r.name)
	if err != nil {
		r.s.forgetRemote(r)
		if errors.Is(err, mesh.ErrOffline) {
			return "", offline(r.name)
		}
		return "", err
	}
	r.mu.Lock()
	r.node = p.Node
	r.mu.Unlock()
	return p.Node, nil
}

func (r *remote) openOn(ctx context.Context, node string, c caller, kind mesh.StreamKind) (net.Conn, error) {
	m := r.s.meshOf()
	if m == nil {
		return nil, offline(r.name)
	}
	ctx, cancel := context.WithTimeout(ctx, trunkOpenTimeout)
	defer cancel()
	conn, err := m.Dial(ctx, node)
	if err != nil {
		return nil, err
	}
	// The answer waits at most as long as the open may take.
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	err = mesh.WriteOpen(conn, mesh.OpenRequest{Kind: kind, Computer: r.name, Person: c.id, PersonName: c.name, Role: c.role})
	if err == nil {
		err = mesh.ReadAnswer(conn)
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	r.s.metrics.RemoteStreams.Add(1)
	return conn, nil
}

func offline(name string) error {
	return api.Errorf(api.KindRelay, "computer %q is offline: it is not attached to the relay", name).
		WithHint("start the Space (it attaches by itself), or check its relay status with GET /v1/relay on it")
}

// forgetRemote drops r and closes its idle streams.
func (s *Server) forgetRemote(r *remote) {
	s.mu.Lock()
	if s.remotes[r.name] == r {
		delete(s.remotes, r.name)
	}
	s.mu.Unlock()
	r.closeIdle()
}

func (r *remote) closeIdle() {
	r.mu.Lock()
	ts := r.transports
	r.transports = map[string]*http.Transport{}
	r.mu.Unlock()
	for _, t := range ts {
		t.CloseIdleConnections()
	}
}

// sweepRemotes drops the remotes nobody used for remoteIdle.
func (s *Server) sweepRemotes() {
	now := time.Now()
	s.mu.Lock()
	var idle []*remote
	for _, r := range s.remotes {
		r.mu.Lock()
		if now.Sub(r.used) > remoteIdle {
			idle = append(idle, r)
		}
		r.mu.Unlock()
	}
	s.mu.Unlock()
	for _, r := range idle {
		s.forgetRemote(r)
	}
}

// stopMesh leaves the mesh (after the sessions ended: their notices and
// directory entries go with it).
func (s *Server) stopMesh() {
	s.mu.Lock()
	m := s.mesh
	s.mesh = nil
	rs := s.remotes
	s.remotes = map[string]*remote{}
	s.mu.Unlock()
	for _, r := range rs {
		r.closeIdle()
	}
	if m != nil {
		_ = m.Close()
	}
}

// announce puts a new session's computer in the cluster's directory and
// tells the other nodes, so that one holding an older session of it ends
// that one. A directory entry that fails leaves the computer reachable
// here only (logged).
func (s *Server) announce(ss *session) {
	m := s.meshOf()
	if m == nil {
		return
	}
	stop, err := m.Announce(ss.comp.Name)
	if err != nil {
		ss.log.Warn("directory", "err", err)
		return
	}
	s.mu.Lock()
	ended := isDone(ss.done)
	if !ended {
		ss.unannounce = stop
	}
	s.mu.Unlock()
	if ended {
		stop()
		return
	}
	s.notify(mesh.Notice{Op: mesh.OpAttached, Computer: ss.comp.Name, SinceMS: ss.since.UnixMilli()})
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// presenceOf tells whether computer is attached, here or to another node,
// and what its home node says of it.
func (s *Server) presenceOf(ctx context.Context, computer string) (mesh.Presence, bool) {
	if ss := s.session(computer); ss != nil {
		p := s.presence(computer)
		p.Node = s.cfg.Node
		return p, true
	}
	m := s.meshOf()
	if m == nil {
		return mesh.Presence{}, false
	}
	p, err := m.Locate(ctx, computer)
	return p, err == nil
}
