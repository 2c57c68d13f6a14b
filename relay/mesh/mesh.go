package mesh

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/nats-io/nats.go"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/tunnel"
)

// Subjects. A node name and a computer name are single subject tokens
// (CheckNode; computer names are DNS labels).
const (
	subjTrunk    = "relay.trunk."    // + <to>.<from>
	subjComputer = "relay.computer." // + <computer>: the directory
	subjNotice   = "relay.notice"
)

// TrunkHelloTimeout bounds the first round trip of a new trunk: a peer
// that does not answer is not there. helloRetry is the pause between tries.
const (
	TrunkHelloTimeout = 5 * time.Second
	helloRetry        = 20 * time.Millisecond
)

// A trunk's keepalive: a ping every TrunkKeepAlive, and a trunk whose ping
// is not answered within TrunkTimeout ends.
const (
	TrunkKeepAlive = 2 * time.Second
	TrunkTimeout   = 5 * time.Second
)

// Options make a Mesh.
type Options struct {
	// Conn reaches every node of the cluster (the store's in-process
	// connection). The mesh does not close it.
	Conn *nats.Conn
	// Node is this node's name, a subject token (CheckNode).
	Node   string
	Logger *slog.Logger
	// Accept gets each stream a peer opens to this node, in a goroutine
	// of its own; it closes the stream.
	Accept func(peer string, c net.Conn)
	// Notice gets each notice another node publishes (Publish), in the
	// order they came; nil: none is read.
	Notice func(Notice)
	// Presence tells the directory's answer for a computer this node
	// announced (Node is filled in); nil: the node's name alone.
	Presence func(computer string) Presence
}

// Mesh is this node's end of the data path between nodes.
type Mesh struct {
	o   Options
	log *slog.Logger
	nc  *nats.Conn

	subs  []*nats.Subscription
	dirCh chan *nats.Msg
	done  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	pipes  map[pipeKey]*pipe
	trunks map[string]*trunk // by peer: the trunk this node made, and streams out on
	closed bool
}

// trunk is a yamux session over a pipe; ready is closed once it answered
// its first ping (err says whether it did).
type trunk struct {
	p     *pipe
	mux   *yamux.Session
	ready chan struct{}
	err   error
}

// CheckNode checks a node's name: 1 to 128 bytes of printable ASCII, no
// space.
func CheckNode(name string) error {
	if name == "" || len(name) > 128 || strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
		return api.Errorf(api.KindInvalidArgument, "node name %.80q: want 1 to 128 printable ASCII bytes, no space", name)
	}
	return nil
}

// token is a node's name as one subject token: itself when it is letters,
// digits, '-' and '_' (a host name with dots is not), a hash of it
// otherwise.
func token(name string) string {
	if len(name) <= 64 && strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) < 0 {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return "h" + hex.EncodeToString(h[:12])
}

// New starts the mesh on o.Conn: the trunks' subscription, the directory's
// server and the notices'.
func New(o Options) (*Mesh, error) {
	if o.Conn == nil {
		return nil, api.Errorf(api.KindInvalidArgument, "mesh: no NATS connection")
	}
	if err := CheckNode(o.Node); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Mesh{
		o: o, log: o.Logger.With("component", "mesh"), nc: o.Conn,
		dirCh: make(chan *nats.Msg, 1024), done: make(chan struct{}),
		pipes: map[pipeKey]*pipe{}, trunks: map[string]*trunk{},
	}
	sub, err := m.nc.Subscribe(subjTrunk+token(o.Node)+".*", m.onTrunkMsg)
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "mesh: subscribe: %w", err)
	}
	m.subs = append(m.subs, sub)
	if o.Notice != nil {
		sub, err := m.nc.Subscribe(subjNotice, m.onNotice)
		if err != nil {
			m.Close()
			return nil, api.Errorf(api.KindEnv, "mesh: subscribe: %w", err)
		}
		m.subs = append(m.subs, sub)
	}
	m.wg.Go(m.serveDirectory)
	// The subscriptions reach the server (and the routes) before New
	// answers: a peer's first message finds them.
	if err := m.nc.Flush(); err != nil {
		m.Close()
		return nil, api.Errorf(api.KindEnv, "mesh: flush: %w", err)
	}
	return m, nil
}

// Node is this node's name.
func (m *Mesh) Node() string { return m.o.Node }

// Close ends every trunk and subscription.
func (m *Mesh) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var ps []*pipe
	for _, p := range m.pipes {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	for _, s := range m.subs {
		_ = s.Unsubscribe()
	}
	for _, p := range ps {
		_ = p.Close()
	}
	close(m.done)
	m.wg.Wait()
	return nil
}

// Dial opens a stream to node on the trunk this node keeps to it, making
// the trunk first when there is none (or the last one failed).
func (m *Mesh) Dial(ctx context.Context, node string) (net.Conn, error) {
	if err := CheckNode(node); err != nil {
		return nil, err
	}
	peer := token(node)
	if peer == token(m.o.Node) {
		return nil, api.Errorf(api.KindInvalidArgument, "mesh: a trunk to this node itself")
	}
	t, err := m.trunk(ctx, peer)
	if err != nil {
		return nil, err
	}
	st, err := t.mux.OpenStream()
	if err != nil {
		// A trunk that ended since: make a new one, once.
		m.forget(t)
		if t, err = m.trunk(ctx, peer); err != nil {
			return nil, err
		}
		if st, err = t.mux.OpenStream(); err != nil {
			return nil, api.Errorf(api.KindRelay, "relay trunk to %s: open a stream: %w", node, err)
		}
	}
	return st, nil
}

// trunk answers the trunk to node (its token) this node made, making it
// if need be; callers at once share one making.
func (m *Mesh) trunk(ctx context.Context, node string) (*trunk, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, api.Errorf(api.KindRelay, "mesh: closed")
	}
	t := m.trunks[node]
	if t == nil || t.mux.IsClosed() && isDone(t.ready) {
		t = m.newTrunk(node)
		m.trunks[node] = t
		go m.hello(t)
	}
	m.mu.Unlock()
	select {
	case <-t.ready:
	case <-ctx.Done():
		return nil, api.Errorf(api.KindTimeout, "relay trunk to %s: %w", node, ctx.Err())
	}
	if t.err != nil {
		return nil, t.err
	}
	return t, nil
}

// newTrunk makes a trunk to node as its maker (the yamux client). m.mu is
// held.
func (m *Mesh) newTrunk(node string) *trunk {
	var b [8]byte
	_, _ = rand.Read(b[:])
	key := pipeKey{peer: node, id: binary.BigEndian.Uint64(b[:]), maker: true}
	t := &trunk{ready: make(chan struct{})}
	t.p = newPipe(m.nc, subjTrunk+node+"."+token(m.o.Node), key, func() { m.dropPipe(key) })
	m.pipes[key] = t.p
	// yamux.Client fails only on a bad config.
	t.mux, _ = yamux.Client(t.p, m.yamuxConfig(node))
	return t
}

// hello makes a new trunk known to its peer: a request the peer answers
// once it holds the trunk's end. No responders (the peer's interest has not
// crossed the routes yet, or it is gone) is retried until
// TrunkHelloTimeout: a dial to a node that is gone fails then rather than
// at yamux's stream timeout.
func (m *Mesh) hello(t *trunk) {
	ctx, cancel := context.WithTimeout(context.Background(), TrunkHelloTimeout)
	defer cancel()
	go func() {
		select {
		case <-m.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	msg := appendMsg(nil, msgHello, t.p.key.id, 0, nil)
	for {
		_, err := m.nc.RequestWithContext(ctx, t.p.out, msg)
		if err == nil {
			break
		}
		if !errors.Is(err, nats.ErrNoResponders) || ctx.Err() != nil {
			t.err = api.Errorf(api.KindRelay, "relay trunk to %s: no answer within %s: %w", t.p.key.peer, TrunkHelloTimeout, err)
			break
		}
		select {
		case <-time.After(helloRetry):
		case <-ctx.Done():
		}
	}
	if t.err != nil {
		m.forget(t)
		_ = t.p.Close()
	}
	close(t.ready)
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// forget drops t as the trunk to its peer, if it still is.
func (m *Mesh) forget(t *trunk) {
	m.mu.Lock()
	if m.trunks[t.p.key.peer] == t {
		delete(m.trunks, t.p.key.peer)
	}
	m.mu.Unlock()
	_ = t.mux.Close()
}

func (m *Mesh) dropPipe(key pipeKey) {
	m.mu.Lock()
	delete(m.pipes, key)
	if t := m.trunks[key.peer]; key.maker && t != nil && t.p.key == key {
		delete(m.trunks, key.peer)
	}
	m.mu.Unlock()
}

func (m *Mesh) yamuxConfig(peer string) *yamux.Config {
	cfg := tunnel.Config(m.log.With("peer", peer))
	// Streams between nodes carry every stream of a node pair: more may
	// wait to be accepted than on one Space's session.
	cfg.AcceptBacklog = 4096
	// A node that died says nothing: its trunks' pings go unanswered,
	// and their streams fail within TrunkKeepAlive + TrunkTimeout rather
	// than a Space session's 45 s. A write to the pipe never waits on the
	// network (NATS buffers it), so a short write timeout is safe.
	cfg.KeepAliveInterval = TrunkKeepAlive
	cfg.ConnectionWriteTimeout = TrunkTimeout
	return cfg
}

// onTrunkMsg takes a message of a trunk to this node: to the trunk it
// belongs to; a first message makes the trunk (this node accepts it); a
// message of a trunk that is gone answers a reset.
func (m *Mesh) onTrunkMsg(msg *nats.Msg) {
	// from is the peer's token: an accepted trunk's peer is known by it.
	from := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
	typ, acceptor, id, seq, payload, ok := parseMsg(msg.Data)
	if !ok || from == token(m.o.Node) {
		return
	}
	key := pipeKey{peer: from, id: id, maker: acceptor}
	m.mu.Lock()
	p := m.pipes[key]
	if p == nil && typ == msgHello && !acceptor && !m.closed {
		p = m.accept(key)
	}
	m.mu.Unlock()
	if typ == msgHello {
		// The trunk's end is made (or was: a repeated hello) before the
		// answer, so the maker's first data finds it.
		_ = msg.Respond(nil)
		return
	}
	switch {
	case p == nil && typ == msgData:
		out := subjTrunk + from + "." + m.o.Node
		flag := byte(fromAcceptor)
		if acceptor {
			flag = 0
		}
		_ = m.nc.Publish(out, appendMsg(nil, msgReset|flag, id, 0, nil))
	case p == nil:
	case typ == msgReset:
		p.end(api.Errorf(api.KindRelay, "relay trunk to %s: reset by the peer", from), false)
	default:
		p.deliver(seq, payload)
	}
}

// accept makes the pipe and yamux server of a trunk a peer made. m.mu is
// held.
func (m *Mesh) accept(key pipeKey) *pipe {
	p := newPipe(m.nc, subjTrunk+key.peer+"."+token(m.o.Node), key, func() { m.dropPipe(key) })
	m.pipes[key] = p
	mux, _ := yamux.Server(p, m.yamuxConfig(key.peer))
	m.wg.Go(func() {
		defer mux.Close()
		for {
			st, err := mux.AcceptStream()
			if err != nil {
				return
			}
			if m.o.Accept == nil {
				_ = st.Close()
				continue
			}
			go m.o.Accept(key.peer, st)
		}
	})
	return p
}

// Trunks is how many trunks this node holds (made or accepted).
func (m *Mesh) Trunks() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pipes)
}
