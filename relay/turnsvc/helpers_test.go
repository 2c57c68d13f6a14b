package turnsvc_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
	"github.com/trycua/cua-spacesd/relay/turnsvc/turnsvctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a test's time: credentials expire when the test says so.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var secret = bytes.Repeat([]byte{7}, turnsvc.SecretLen)

// env is a TURN server on 127.0.0.1 with UDP, TCP and TLS (a test CA).
type env struct {
	srv   *turnsvc.Server
	clock *clock
	pool  *x509.CertPool
}

func start(t *testing.T, o turnsvc.Options) *env {
	t.Helper()
	ca := tlstest.NewCA(t)
	c := newClock()
	o.UDPAddr, o.TCPAddr, o.TLSAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")}, NextProtos: []string{"http/1.1"}}
	if o.Secret == nil {
		o.Secret = secret
	}
	o.Clock = c.Now
	srv, err := turnsvc.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &env{srv: srv, clock: c, pool: pool}
}

// client is a real pion TURN client over one transport.
type client struct{ *turnsvctest.Client }

func (e *env) dial(t *testing.T, transport string, cred protocol.TurnCredential) *client {
	t.Helper()
	return &client{turnsvctest.Dial(t, e.srv, transport, cred, &tls.Config{RootCAs: e.pool, ServerName: "127.0.0.1"})}
}

// allocate opens the client's allocation, closed at the test's end.
func (c *client) allocate(t *testing.T) net.PacketConn { return c.MustAllocate(t) }

// refresh sends a Refresh on the client's 5-tuple with cred, as a client
// keeping its allocation does, and answers whether it succeeded.
func (c *client) refresh(t *testing.T, cred protocol.TurnCredential) bool {
	t.Helper()
	first := stun.MustBuild(stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest), stun.Fingerprint)
	res, err := c.PerformTransaction(first, c.Server, false)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	var nonce stun.Nonce
	var realm stun.Realm
	if err := nonce.GetFrom(res.Msg); err != nil {
		t.Fatalf("refresh without auth: no nonce in %v", res.Msg)
	}
	if err := realm.GetFrom(res.Msg); err != nil {
		t.Fatalf("refresh without auth: no realm in %v", res.Msg)
	}
	msg := stun.MustBuild(stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest),
		stun.NewUsername(cred.Username), realm, nonce,
		stun.NewLongTermIntegrity(cred.Username, realm.String(), cred.Password), stun.Fingerprint)
	res, err = c.PerformTransaction(msg, c.Server, false)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	return res.Msg.Type.Class == stun.ClassSuccessResponse
}

// peer is a UDP peer on loopback.
func peer(t *testing.T) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// exchange sends out from the allocation to p and back back from p to the
// allocation, checks each arrives, and answers how many times out was
// sent (UDP may drop one).
func exchange(t *testing.T, relay, p net.PacketConn, out, back []byte) (sends int) {
	t.Helper()
	buf := make([]byte, 1500)
	// The first packet also makes the permission; UDP may drop it, so
	// send until one arrives.
	var from net.Addr
	for i := 0; ; i++ {
		if _, err := relay.WriteTo(out, p.LocalAddr()); err != nil {
			t.Fatalf("write to peer: %v", err)
		}
		sends++
		_ = p.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, addr, err := p.ReadFrom(buf)
		if err == nil {
			if !bytes.Equal(buf[:n], out) {
				t.Fatalf("peer got %q, want %q", buf[:n], out)
			}
			from = addr
			break
		}
		if i == 5 {
			t.Fatalf("peer heard nothing: %v", err)
		}
	}
	if from.String() != relay.LocalAddr().String() {
		t.Fatalf("peer heard from %s, want the relayed address %s", from, relay.LocalAddr())
	}
	if _, err := p.WriteTo(back, from); err != nil {
		t.Fatal(err)
	}
	_ = relay.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, addr, err := relay.ReadFrom(buf)
	if err != nil {
		t.Fatalf("allocation heard nothing from the peer: %v", err)
	}
	if !bytes.Equal(buf[:n], back) || addr.String() != p.LocalAddr().String() {
		t.Fatalf("allocation got %q from %s, want %q from %s", buf[:n], addr, back, p.LocalAddr())
	}
	return sends
}

// eventually polls cond for a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 5s", what)
}
