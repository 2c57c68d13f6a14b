// Package turnsvctest is a real pion TURN client of a turnsvc server, for
// the tests of the TURN server and of the relay that runs it.
package turnsvctest

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/pion/turn/v5"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
)

// Client is a pion TURN client listening over one transport; Server is
// the address it talks to. The test's end closes it.
type Client struct {
	*turn.Client
	Server net.Addr
}

// Dial connects to srv over transport ("udp", "tcp" or "tls", the last
// with tlsConfig) with cred; the client listens at once.
func Dial(t testing.TB, srv *turnsvc.Server, transport string, cred protocol.TurnCredential, tlsConfig *tls.Config) *Client {
	t.Helper()
	var conn net.PacketConn
	var server net.Addr
	switch transport {
	case "udp":
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conn, server = pc, srv.UDPAddr()
	case "tcp":
		c, err := net.Dial("tcp", srv.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn, server = turn.NewSTUNConn(c), srv.TCPAddr()
	case "tls":
		c, err := tls.Dial("tcp", srv.TLSAddr().String(), tlsConfig)
		if err != nil {
			t.Fatal(err)
		}
		conn, server = turn.NewSTUNConn(c), srv.TLSAddr()
	default:
		t.Fatalf("TURN transport %q: want udp, tcp or tls", transport)
	}
	tc, err := turn.NewClient(&turn.ClientConfig{
		STUNServerAddr: server.String(), TURNServerAddr: server.String(),
		Username: cred.Username, Password: cred.Password, Conn: conn,
		RTO: 200 * time.Millisecond,
	})
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tc.Close()
		conn.Close()
	})
	if err := tc.Listen(); err != nil {
		t.Fatal(err)
	}
	return &Client{Client: tc, Server: server}
}

// MustAllocate opens the client's allocation, closed at the test's end.
func (c *Client) MustAllocate(t testing.TB) net.PacketConn {
	t.Helper()
	relay, err := c.Allocate()
	if err != nil {
		t.Fatalf("allocate: %v", err)
	}
	t.Cleanup(func() { relay.Close() })
	return relay
}
