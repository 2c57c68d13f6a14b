// Package turnsvc is cua-relay's TURN server (pion/turn): UDP and TCP on
// one port, TLS on its own, REST credentials (draft-uberti-behave-turn-rest)
// that the relay mints per view and checks without a lookup, allocations
// counted and metered per computer, and bounded.
//
// A credential opens an allocation only before its expiry; an allocation
// it opened keeps refreshing (Refresh, CreatePermission, ChannelBind) past
// it, so a view longer than the credential's life keeps its TURN path.
// Only UDP relaying is offered (what WebRTC uses); RFC 6062 TCP relaying
// is refused.
package turnsvc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/turn/v5"

	"github.com/trycua/cua-spacesd/relay/protocol"
)

// Defaults and limits.
const (
	// DefaultPort is TURN's port (UDP and TCP); TLS has 5349 by custom.
	DefaultPort = 3478
	// DefaultCredentialTTL is how long a minted credential opens
	// allocations: a view's ICE gathers within seconds of the mint.
	DefaultCredentialTTL = 10 * time.Minute
	// DefaultMaxAllocationsPerComputer bounds the live allocations of one
	// computer's views (both ends of each view count: a handful per view,
	// one per ICE transport a browser tries).
	DefaultMaxAllocationsPerComputer = 32
	// DefaultMaxAllocations bounds the node's live allocations (each holds
	// a UDP socket and a goroutine).
	DefaultMaxAllocations = 4096
	// DefaultRealm is the realm the server announces.
	DefaultRealm = "cua-relay"
	// SecretLen is the length of a TURN secret the relay makes.
	SecretLen = 32
	// firstReadTimeout bounds a TCP or TLS connection's handshake and
	// first message; idleTimeout a later silence (an allocation refreshes
	// well within its 10-minute lifetime, so a connection quiet longer
	// holds nothing).
	firstReadTimeout = 30 * time.Second
	idleTimeout      = 15 * time.Minute
	// closeWait bounds Close's wait for the allocations to end.
	closeWait = 2 * time.Second
)

// Options configure New. UDPAddr, TCPAddr and TLSAddr are listen
// addresses ("host:port"); "" leaves that listener off, and at least one
// must be on.
type Options struct {
	UDPAddr string
	TCPAddr string
	// TLSAddr serves TURN over TLS with TLSConfig (its certificates; ALPN
	// is left to the client).
	TLSAddr   string
	TLSConfig *tls.Config
	// RelayIP is the address given to clients as their relayed address
	// (XOR-RELAYED-ADDRESS). Default: the listen IP if it is a specific
	// one, else the machine's first non-loopback IPv4 (loopback if none).
	// Behind a 1:1 NAT (a cloud VM's public IP) give the public address.
	RelayIP net.IP
	// Host is the TURN host announced in credentials (TurnCredential.Host);
	// "" lets each client use the host it reached the relay by.
	Host string
	// Secret is the HMAC key of the credentials (SecretLen bytes or more).
	Secret []byte
	Realm  string
	Logger *slog.Logger
	// Clock is the time credentials are minted and checked by (default
	// time.Now).
	Clock         func() time.Time
	CredentialTTL time.Duration
	// MaxAllocationsPerComputer and MaxAllocations override the defaults.
	MaxAllocationsPerComputer int
	MaxAllocations            int
	// MaxConns bounds the connections open at once on each of the TCP and
	// TLS listeners (default 2*MaxAllocations): each is a goroutine.
	MaxConns int
	// RelayPortMin and RelayPortMax, when set, keep the relayed sockets'
	// ports in that range (one firewall rule); default: the kernel's
	// ephemeral ports.
	RelayPortMin, RelayPortMax int
}

// Server is a running TURN server.
type Server struct {
	o       Options
	log     *slog.Logger
	now     func() time.Time
	relayIP net.IP
	srv     *turn.Server
	meter   *meter

	udp        net.PacketConn
	tcp, tlsLn *connLimiter
	udpPort    int
	tcpPort    int
	tlsPort    int
	closeOnce  sync.Once
	closeErr   error
}

// New listens on the addresses of o and serves TURN until Close.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.UDPAddr == "" && o.TCPAddr == "" && o.TLSAddr == "" {
		return nil, errors.New("turnsvc: no listener (give a UDP, TCP or TLS address)")
	}
	if len(o.Secret) < 16 {
		return nil, errors.New("turnsvc: the secret is shorter than 16 bytes")
	}
	if o.TLSAddr != "" && o.TLSConfig == nil {
		return nil, errors.New("turnsvc: a TLS address without a TLS config")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Realm == "" {
		o.Realm = DefaultRealm
	}
	if o.CredentialTTL <= 0 {
		o.CredentialTTL = DefaultCredentialTTL
	}
	if o.MaxAllocationsPerComputer <= 0 {
		o.MaxAllocationsPerComputer = DefaultMaxAllocationsPerComputer
	}
	if o.MaxAllocations <= 0 {
		o.MaxAllocations = DefaultMaxAllocations
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 2 * o.MaxAllocations
	}
	if (o.RelayPortMin == 0) != (o.RelayPortMax == 0) || o.RelayPortMin < 0 || o.RelayPortMax > 65535 || o.RelayPortMin > o.RelayPortMax {
		return nil, fmt.Errorf("turnsvc: relay ports %d-%d: want 1 <= min <= max <= 65535, or neither", o.RelayPortMin, o.RelayPortMax)
	}
	s := &Server{o: o, log: o.Logger.With("component", "turn"), now: o.Clock}
	bindIP, relayIP, err := relayAddress(o)
	if err != nil {
		return nil, err
	}
	s.relayIP = relayIP
	s.meter = newMeter(o.MaxAllocationsPerComputer, o.MaxAllocations, o.Clock)
	gen := &relayGen{bind: bindIP, relay: relayIP, meter: s.meter, minPort: o.RelayPortMin, maxPort: o.RelayPortMax}
	perm := func(_ net.Addr, peer net.IP) bool { return peerAllowed(relayIP, peer) }

	var lc net.ListenConfig
	cfg := turn.ServerConfig{
		Realm:       o.Realm,
		AuthHandler: s.auth,
		// An Allocate that names no address family gets IPv4 (RFC 6156's
		// default), also from a client that reached a dual-stack listener
		// over IPv6: relayed addresses are IPv4 only.
		StrictAddressFamily: true,
		QuotaHandler:        func(userID, _ string, _ net.Addr) bool { return s.meter.quotaOK(userID) },
		LoggerFactory:       loggerFactory{s.log},
		EventHandler: turn.EventHandler{
			OnAuth: func(_, _ net.Addr, _, _, _ string, _ string, verdict bool) {
				if !verdict {
					s.meter.authRefused(refusedIntegrity)
				}
			},
			OnAllocationCreated: func(_, _ net.Addr, _, userID, _ string, _ net.Addr, _ int) {
				s.meter.created(userID)
			},
		},
	}
	cleanup := func() {
		if s.udp != nil {
			s.udp.Close()
		}
		for _, l := range []*connLimiter{s.tcp, s.tlsLn} {
			if l != nil {
				l.Close()
			}
		}
	}
	if o.UDPAddr != "" {
		pc, err := lc.ListenPacket(ctx, "udp", o.UDPAddr)
		if err != nil {
			return nil, fmt.Errorf("turnsvc: listen UDP %s: %w", o.UDPAddr, err)
		}
		setBuffers(pc, listenerBufferBytes)
		s.udp = pc
		s.udpPort = pc.LocalAddr().(*net.UDPAddr).Port
		cfg.PacketConnConfigs = append(cfg.PacketConnConfigs, turn.PacketConnConfig{PacketConn: pc, RelayAddressGenerator: gen, PermissionHandler: perm})
	}
	if o.TCPAddr != "" {
		ln, err := lc.Listen(ctx, "tcp", o.TCPAddr)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("turnsvc: listen TCP %s: %w", o.TCPAddr, err)
		}
		s.tcp = newConnLimiter(ln, s.meter, o.MaxConns)
		s.tcpPort = ln.Addr().(*net.TCPAddr).Port
		cfg.ListenerConfigs = append(cfg.ListenerConfigs, turn.ListenerConfig{Listener: s.tcp, RelayAddressGenerator: gen, PermissionHandler: perm})
	}
	if o.TLSAddr != "" {
		ln, err := lc.Listen(ctx, "tcp", o.TLSAddr)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("turnsvc: listen TLS %s: %w", o.TLSAddr, err)
		}
		s.tlsLn = newConnLimiter(ln, s.meter, o.MaxConns)
		s.tlsPort = ln.Addr().(*net.TCPAddr).Port
		tc := o.TLSConfig.Clone()
		// The relay's config names http/1.1; a TURN client may offer
		// "stun.turn" or nothing, and either must do.
		tc.NextProtos = nil
		cfg.ListenerConfigs = append(cfg.ListenerConfigs, turn.ListenerConfig{Listener: tls.NewListener(s.tlsLn, tc), RelayAddressGenerator: gen, PermissionHandler: perm})
	}
	s.srv, err = turn.NewServer(cfg)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("turnsvc: %w", err)
	}
	s.log.Info("TURN serving", "udp", s.UDPAddr(), "tcp", s.TCPAddr(), "tls", s.TLSAddr(), "relay_ip", relayIP.String(), "realm", o.Realm)
	return s, nil
}

// Close stops the listeners, closes every TCP and TLS connection, and ends
// every allocation.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Close()
		// pion closes the listeners only: a client's connection would
		// keep its goroutine and allocation.
		for _, l := range []*connLimiter{s.tcp, s.tlsLn} {
			if l != nil {
				l.closeConns()
			}
		}
		// pion ends the allocations from its read loops as they stop;
		// wait (a little) so that Close leaves no relayed socket open.
		for deadline := time.Now().Add(closeWait); s.TotalStats().Live > 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	})
	return s.closeErr
}

// UDPAddr is the UDP listener's address (nil when off).
func (s *Server) UDPAddr() net.Addr {
	if s.udp == nil {
		return nil
	}
	return s.udp.LocalAddr()
}

// TCPAddr is the TCP listener's address (nil when off).
func (s *Server) TCPAddr() net.Addr {
	if s.tcp == nil {
		return nil
	}
	return s.tcp.Addr()
}

// TLSAddr is the TLS listener's address (nil when off).
func (s *Server) TLSAddr() net.Addr {
	if s.tlsLn == nil {
		return nil
	}
	return s.tlsLn.Addr()
}

// RelayIP is the address allocations are given.
func (s *Server) RelayIP() net.IP { return s.relayIP }

// Credential mints a credential for one end (who: "space" or "viewer") of
// one view of computer: it opens allocations until CredentialTTL from now.
func (s *Server) Credential(computer, who string) protocol.TurnCredential {
	if who == "" || len(who) > maxWhoLen-1-2*randomLen || !isWho(who) {
		who = "peer"
	}
	u := Username{Expiry: s.now().Add(s.o.CredentialTTL), Computer: computer, Who: newWho(who)}
	name := u.String()
	return protocol.TurnCredential{
		Username: name, Password: password(s.o.Secret, name), Host: s.o.Host,
		UDPPort: s.udpPort, TCPPort: s.tcpPort, TLSPort: s.tlsPort,
	}
}

// auth is pion's AuthHandler: it answers the computer as the user id and
// the long-term key of the username's REST password. pion checks the
// request's MESSAGE-INTEGRITY with that key (hmac.Equal); a wrong password
// fails there and is counted by OnAuth.
func (s *Server) auth(ra *turn.RequestAttributes) (string, []byte, bool) {
	u, err := ParseUsername(ra.Username)
	if err != nil {
		s.meter.authRefused(refusedUsername)
		return "", nil, false
	}
	if ra.Realm != s.o.Realm {
		s.meter.authRefused(refusedUsername)
		return "", nil, false
	}
	// Expiry bounds when a credential opens an allocation; the requests
	// that keep one alive (Refresh, CreatePermission, ChannelBind) run on
	// the allocation's own 5-tuple and keep working past it.
	if ra.Method == stun.MethodAllocate && !s.now().Before(u.Expiry) {
		s.meter.authRefused(refusedExpired)
		return "", nil, false
	}
	return u.Computer, turn.GenerateAuthKey(ra.Username, ra.Realm, password(s.o.Secret, ra.Username)), true
}

// relayAddress answers where relayed sockets bind and the address clients
// are told.
func relayAddress(o Options) (bind, relay net.IP, err error) {
	var listenIP net.IP
	for _, a := range []string{o.UDPAddr, o.TCPAddr, o.TLSAddr} {
		if a == "" {
			continue
		}
		h, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, nil, fmt.Errorf("turnsvc: listen address %q: %w", a, err)
		}
		if ip := net.ParseIP(h); ip != nil && !ip.IsUnspecified() {
			listenIP = ip
		} else if h == "localhost" {
			listenIP = net.IPv4(127, 0, 0, 1)
		}
		break
	}
	bind = net.IPv4zero
	if listenIP != nil {
		bind = listenIP
	}
	switch {
	case o.RelayIP != nil:
		relay = o.RelayIP
	case listenIP != nil:
		relay = listenIP
	default:
		relay = firstIPv4()
	}
	if relay.To4() == nil {
		return nil, nil, fmt.Errorf("turnsvc: relay address %s: only IPv4 relaying is offered", relay)
	}
	return bind, relay.To4(), nil
}

// firstIPv4 is the machine's first non-loopback IPv4, or loopback.
func firstIPv4() net.IP {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.To4()
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}

// peerAllowed keeps the relay from being a way into its own network: a
// peer on loopback is reached only by a relay on loopback (a test or a
// one-machine setup), one on a private network only by a relay on one,
// and link-local (cloud metadata services), multicast and unspecified
// addresses never.
func peerAllowed(relay, peer net.IP) bool {
	switch {
	case peer == nil || peer.IsUnspecified() || peer.IsMulticast() || peer.IsLinkLocalUnicast() ||
		peer.IsLinkLocalMulticast() || peer.Equal(net.IPv4bcast):
		return false
	case peer.IsLoopback():
		return relay.IsLoopback()
	case peer.IsPrivate():
		return relay.IsLoopback() || relay.IsPrivate()
	}
	return true
}
