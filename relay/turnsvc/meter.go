package turnsvc

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/turn/v5"
)

// Reasons a request is refused (the auth_refused metric's label).
const (
	refusedUsername  = "bad_username"  // not a REST username of this relay's form, or another realm
	refusedExpired   = "expired"       // an Allocate with an expired credential
	refusedIntegrity = "bad_integrity" // a wrong password or a tampered username
)

// Bounds of the per-computer table (meter.computers).
const (
	// keepIdle is how long a computer with no allocation stays in the
	// table (its counters on /metrics) after its last allocation ended.
	keepIdle = 15 * time.Minute
	// maxIdleFactor bounds the idle entries: past MaxAllocations times
	// this, the oldest idle ones go first.
	maxIdleFactor = 4
)

var errQuota = errors.New("turnsvc: allocation quota reached")

// meter counts allocations and relayed bytes, per computer and in total,
// and holds the allocation quota.
type meter struct {
	perComputer, total int
	now                func() time.Time

	mu        sync.Mutex
	computers map[string]*computerStats
	live      int // allocations open, over all computers

	createdTotal, toPeer, fromPeer atomic.Int64
	refusedQuota                   atomic.Int64
	refusedAuth                    sync.Map // reason -> *atomic.Int64
	conns, connsRefused            atomic.Int64
}

// computerStats are one computer's counters. live and idleSince are under
// meter.mu; the byte counters are atomic (the relay path adds to them).
type computerStats struct {
	live             int
	idleSince        time.Time
	created          atomic.Int64
	toPeer, fromPeer atomic.Int64
}

func newMeter(perComputer, total int, now func() time.Time) *meter {
	m := &meter{perComputer: perComputer, total: total, now: now, computers: map[string]*computerStats{}}
	for _, r := range []string{refusedUsername, refusedExpired, refusedIntegrity} {
		m.refusedAuth.Store(r, new(atomic.Int64))
	}
	return m
}

func (m *meter) authRefused(reason string) {
	if c, ok := m.refusedAuth.Load(reason); ok {
		c.(*atomic.Int64).Add(1)
	}
}

// quotaOK is the QuotaHandler's answer: whether computer may open one more
// allocation now (reserve makes it so, under the same lock).
func (m *meter) quotaOK(computer string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ok := m.fits(computer)
	if !ok {
		m.refusedQuota.Add(1)
	}
	return ok
}

func (m *meter) fits(computer string) bool {
	if m.live >= m.total {
		return false
	}
	c := m.computers[computer]
	return c == nil || c.live < m.perComputer
}

// reserve counts one more live allocation of computer, unless the quota
// is reached (two Allocates may pass quotaOK at once; one fails here).
func (m *meter) reserve(computer string) (*computerStats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.fits(computer) {
		m.refusedQuota.Add(1)
		return nil, errQuota
	}
	c := m.computers[computer]
	if c == nil {
		m.sweepLocked()
		c = &computerStats{}
		m.computers[computer] = c
	}
	c.live++
	m.live++
	return c, nil
}

func (m *meter) release(c *computerStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.live--
	m.live--
	if c.live == 0 {
		c.idleSince = m.now()
	}
}

// created counts an allocation made (pion's OnAllocationCreated).
func (m *meter) created(computer string) {
	m.createdTotal.Add(1)
	m.mu.Lock()
	c := m.computers[computer]
	m.mu.Unlock()
	if c != nil {
		c.created.Add(1)
	}
}

// sweepLocked drops computers idle past keepIdle, and the oldest idle ones
// while the table is over its bound: computers come and go, the table does
// not grow with them.
func (m *meter) sweepLocked() {
	now := m.now()
	var idle []string
	for name, c := range m.computers {
		if c.live > 0 {
			continue
		}
		if now.Sub(c.idleSince) >= keepIdle {
			delete(m.computers, name)
			continue
		}
		idle = append(idle, name)
	}
	if over := len(idle) - maxIdleFactor*m.total; over >= 0 {
		slices.SortFunc(idle, func(a, b string) int { return m.computers[a].idleSince.Compare(m.computers[b].idleSince) })
		for _, name := range idle[:over+1] {
			delete(m.computers, name)
		}
	}
}

// relayGen makes the relayed sockets: UDP on the bind address, told to
// clients as the relay address, counted against the quota and metered.
type relayGen struct {
	bind, relay      net.IP
	meter            *meter
	minPort, maxPort int // 0: any ephemeral port
}

// relayPortTries bounds the random ports tried in the range before an
// Allocate fails (a full range answers 508 Insufficient Capacity).
const relayPortTries = 16

// listen opens a relayed socket on port, or (port 0) on a port of the
// range, or any.
func (g *relayGen) listen(port int) (net.PacketConn, error) {
	open := func(p int) (net.PacketConn, error) {
		pc, err := net.ListenPacket("udp4", net.JoinHostPort(g.bind.String(), strconv.Itoa(p)))
		if err == nil {
			setBuffers(pc, relayedBufferBytes)
		}
		return pc, err
	}
	if g.minPort == 0 {
		return open(port)
	}
	if port != 0 {
		if port < g.minPort || port > g.maxPort {
			return nil, fmt.Errorf("turnsvc: port %d is outside the relay ports %d-%d", port, g.minPort, g.maxPort)
		}
		return open(port)
	}
	var err error
	for range relayPortTries {
		var pc net.PacketConn
		if pc, err = open(g.minPort + rand.IntN(g.maxPort-g.minPort+1)); err == nil {
			return pc, nil
		}
	}
	return nil, fmt.Errorf("turnsvc: no free relay port in %d-%d: %w", g.minPort, g.maxPort, err)
}

func (g *relayGen) Validate() error { return nil }

func (g *relayGen) AllocatePacketConn(c turn.AllocateListenerConfig) (net.PacketConn, net.Addr, error) {
	if c.Network != "udp4" {
		return nil, nil, fmt.Errorf("turnsvc: %s relaying is not offered", c.Network)
	}
	st, err := g.meter.reserve(c.UserID)
	if err != nil {
		return nil, nil, err
	}
	pc, err := g.listen(c.RequestedPort)
	if err != nil {
		g.meter.release(st)
		return nil, nil, err
	}
	addr := *pc.LocalAddr().(*net.UDPAddr)
	addr.IP = g.relay
	return &meteredConn{PacketConn: pc, m: g.meter, c: st}, &addr, nil
}

// AllocateListener and AllocateConn are RFC 6062 TCP relaying, which
// WebRTC does not use: refused.
func (g *relayGen) AllocateListener(turn.AllocateListenerConfig) (net.Listener, net.Addr, error) {
	return nil, nil, errors.New("turnsvc: TCP relaying is not offered")
}

func (g *relayGen) AllocateConn(turn.AllocateConnConfig) (net.Conn, error) {
	return nil, errors.New("turnsvc: TCP relaying is not offered")
}

// meteredConn is a relayed socket: what it reads came from peers, what it
// writes goes to them. Its Close ends the allocation's count.
type meteredConn struct {
	net.PacketConn
	m    *meter
	c    *computerStats
	once sync.Once
}

func (p *meteredConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := p.PacketConn.ReadFrom(b)
	if n > 0 {
		p.c.fromPeer.Add(int64(n))
		p.m.fromPeer.Add(int64(n))
	}
	return n, addr, err
}

// WriteTo counts before it writes (and takes back what was not written),
// so a peer never holds a packet the counters do not show yet.
func (p *meteredConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	p.c.toPeer.Add(int64(len(b)))
	p.m.toPeer.Add(int64(len(b)))
	n, err := p.PacketConn.WriteTo(b, addr)
	if n < len(b) {
		p.c.toPeer.Add(int64(n - len(b)))
		p.m.toPeer.Add(int64(n - len(b)))
	}
	return n, err
}

func (p *meteredConn) Close() error {
	p.once.Do(func() { p.m.release(p.c) })
	return p.PacketConn.Close()
}

// Stats are a computer's TURN counters (tests, and the metrics).
type Stats struct {
	Live, Created    int64
	ToPeer, FromPeer int64
}

// ComputerStats answers computer's counters (zero when the table has no
// entry for it).
func (s *Server) ComputerStats(computer string) Stats {
	m := s.meter
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.computers[computer]
	if c == nil {
		return Stats{}
	}
	return Stats{Live: int64(c.live), Created: c.created.Load(), ToPeer: c.toPeer.Load(), FromPeer: c.fromPeer.Load()}
}

// TotalStats answers the node's counters.
func (s *Server) TotalStats() Stats {
	m := s.meter
	m.mu.Lock()
	live := m.live
	m.mu.Unlock()
	return Stats{Live: int64(live), Created: m.createdTotal.Load(), ToPeer: m.toPeer.Load(), FromPeer: m.fromPeer.Load()}
}

// WriteMetrics writes the TURN series in the Prometheus text format
// (cua_relay_turn_*), per computer and in total.
func (s *Server) WriteMetrics(w io.Writer) {
	m := s.meter
	type row struct {
		name string
		st   Stats
	}
	m.mu.Lock()
	m.sweepLocked()
	rows := make([]row, 0, len(m.computers))
	for name, c := range m.computers {
		rows = append(rows, row{name, Stats{Live: int64(c.live), Created: c.created.Load(), ToPeer: c.toPeer.Load(), FromPeer: c.fromPeer.Load()}})
	}
	m.mu.Unlock()
	slices.SortFunc(rows, func(a, b row) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	t := s.TotalStats()
	fmt.Fprintf(w, "# TYPE cua_relay_turn_allocations gauge\ncua_relay_turn_allocations %d\n", t.Live)
	fmt.Fprintf(w, "# TYPE cua_relay_turn_allocations_created_total counter\ncua_relay_turn_allocations_created_total %d\n", t.Created)
	fmt.Fprintln(w, "# TYPE cua_relay_turn_bytes_total counter")
	fmt.Fprintf(w, "cua_relay_turn_bytes_total{direction=\"to_peer\"} %d\ncua_relay_turn_bytes_total{direction=\"from_peer\"} %d\n", t.ToPeer, t.FromPeer)
	fmt.Fprintf(w, "# TYPE cua_relay_turn_allocations_refused_total counter\ncua_relay_turn_allocations_refused_total{reason=\"quota\"} %d\n", m.refusedQuota.Load())
	fmt.Fprintln(w, "# TYPE cua_relay_turn_auth_refused_total counter")
	for _, r := range []string{refusedUsername, refusedExpired, refusedIntegrity} {
		c, _ := m.refusedAuth.Load(r)
		fmt.Fprintf(w, "cua_relay_turn_auth_refused_total{reason=%q} %d\n", r, c.(*atomic.Int64).Load())
	}
	fmt.Fprintf(w, "# TYPE cua_relay_turn_connections gauge\ncua_relay_turn_connections %d\n", m.conns.Load())
	fmt.Fprintf(w, "# TYPE cua_relay_turn_connections_refused_total counter\ncua_relay_turn_connections_refused_total %d\n", m.connsRefused.Load())
	fmt.Fprintln(w, "# TYPE cua_relay_turn_computer_allocations gauge")
	for _, r := range rows {
		fmt.Fprintf(w, "cua_relay_turn_computer_allocations{computer=%q} %d\n", r.name, r.st.Live)
	}
	fmt.Fprintln(w, "# TYPE cua_relay_turn_computer_allocations_created_total counter")
	for _, r := range rows {
		fmt.Fprintf(w, "cua_relay_turn_computer_allocations_created_total{computer=%q} %d\n", r.name, r.st.Created)
	}
	fmt.Fprintln(w, "# TYPE cua_relay_turn_computer_bytes_total counter")
	for _, r := range rows {
		fmt.Fprintf(w, "cua_relay_turn_computer_bytes_total{computer=%q,direction=\"to_peer\"} %d\n", r.name, r.st.ToPeer)
		fmt.Fprintf(w, "cua_relay_turn_computer_bytes_total{computer=%q,direction=\"from_peer\"} %d\n", r.name, r.st.FromPeer)
	}
}
