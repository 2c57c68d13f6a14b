package turnsvc_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
)

// A viewer's credential opens an allocation over each transport; data goes
// both ways between the allocation and a peer, and is metered against the
// credential's computer.
func TestRelayOverEachTransport(t *testing.T) {
	e := start(t, turnsvc.Options{Host: "turn.example"})
	var toPeer, fromPeer int64
	for _, transport := range []string{"udp", "tcp", "tls"} {
		t.Run(transport, func(t *testing.T) {
			computer := "box-" + transport
			cred := e.srv.Credential(computer, "viewer")
			if cred.Host != "turn.example" || cred.UDPPort == 0 || cred.TCPPort == 0 || cred.TLSPort == 0 {
				t.Fatalf("credential %+v: want the host and three ports", cred)
			}
			relay := e.dial(t, transport, cred).allocate(t)
			if ip := relay.LocalAddr().(*net.UDPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) {
				t.Fatalf("relayed address %s, want 127.0.0.1 (the listen IP)", relay.LocalAddr())
			}
			p := peer(t)
			out, back := []byte("to the peer over "+transport), []byte("back from the peer")
			sends := exchange(t, relay, p, out, back)
			st := e.srv.ComputerStats(computer)
			want := turnsvc.Stats{Live: 1, Created: 1, ToPeer: int64(sends * len(out)), FromPeer: int64(len(back))}
			if st != want {
				t.Fatalf("stats of %s: %+v, want %+v", computer, st, want)
			}
			toPeer += want.ToPeer
			fromPeer += want.FromPeer
			relay.Close()
			eventually(t, "the allocation ends", func() bool { return e.srv.ComputerStats(computer).Live == 0 })
		})
	}
	if tot := e.srv.TotalStats(); tot.Live != 0 || tot.Created != 3 || tot.ToPeer != toPeer || tot.FromPeer != fromPeer {
		t.Fatalf("totals %+v, want 0 live, 3 created, %d to and %d from peers", tot, toPeer, fromPeer)
	}
}

// The password is the TURN REST one, computed here on its own.
func TestCredentialIsTURNREST(t *testing.T) {
	e := start(t, turnsvc.Options{CredentialTTL: 5 * time.Minute})
	cred := e.srv.Credential("box-1", "space")
	m := hmac.New(sha1.New, secret)
	m.Write([]byte(cred.Username))
	if want := base64.StdEncoding.EncodeToString(m.Sum(nil)); cred.Password != want {
		t.Fatalf("password %q, want base64(HMAC-SHA1(secret, username)) %q", cred.Password, want)
	}
	u, err := turnsvc.ParseUsername(cred.Username)
	if err != nil {
		t.Fatal(err)
	}
	if u.Computer != "box-1" || !strings.HasPrefix(u.Who, "space-") || u.Expiry.Unix() != e.clock.Now().Add(5*time.Minute).Unix() {
		t.Fatalf("username %q parsed as %+v", cred.Username, u)
	}
	if other := e.srv.Credential("box-1", "space"); other.Username == cred.Username {
		t.Fatalf("two credentials minted alike: %q", other.Username)
	}
}

// restPassword signs a username with secret, as the relay does.
func restPassword(secret []byte, username string) string {
	m := hmac.New(sha1.New, secret)
	m.Write([]byte(username))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func metric(t *testing.T, srv *turnsvc.Server, series string) int64 {
	t.Helper()
	var b strings.Builder
	srv.WriteMetrics(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no series %s in\n%s", series, b.String())
	return 0
}

// Each way a credential can be wrong is refused, and counted.
func TestRefusedCredentials(t *testing.T) {
	e := start(t, turnsvc.Options{})
	good := e.srv.Credential("box-1", "viewer")
	future := strconv.FormatInt(e.clock.Now().Add(time.Hour).Unix(), 10)
	for _, c := range []struct {
		name   string
		cred   func() protocol.TurnCredential
		reason string
	}{
		{"wrong password", func() protocol.TurnCredential {
			c := good
			c.Password = restPassword([]byte("another secret, another relay!!!"), c.Username)
			return c
		}, "bad_integrity"},
		{"tampered computer", func() protocol.TurnCredential {
			c := good
			c.Username = strings.Replace(c.Username, ":box-1:", ":box-2:", 1)
			return c
		}, "bad_integrity"},
		{"tampered expiry", func() protocol.TurnCredential {
			c := good
			_, rest, _ := strings.Cut(c.Username, ":")
			c.Username = future + "9:" + rest
			return c
		}, "bad_integrity"},
		{"expired", func() protocol.TurnCredential {
			c := e.srv.Credential("box-1", "viewer")
			e.clock.Advance(turnsvc.DefaultCredentialTTL + time.Second)
			return c
		}, "expired"},
		{"not a computer name", func() protocol.TurnCredential {
			u := future + ":-box:viewer-1"
			return protocol.TurnCredential{Username: u, Password: restPassword(secret, u)}
		}, "bad_username"},
		{"no computer", func() protocol.TurnCredential {
			u := future + ":viewer-1"
			return protocol.TurnCredential{Username: u, Password: restPassword(secret, u)}
		}, "bad_username"},
	} {
		t.Run(c.name, func(t *testing.T) {
			series := fmt.Sprintf("cua_relay_turn_auth_refused_total{reason=%q}", c.reason)
			before := metric(t, e.srv, series)
			cl := e.dial(t, "udp", c.cred())
			if relay, err := cl.Allocate(); err == nil {
				relay.Close()
				t.Fatal("allocated")
			}
			if after := metric(t, e.srv, series); after <= before {
				t.Fatalf("%s: %d, then %d", series, before, after)
			}
		})
	}
	if tot := e.srv.TotalStats(); tot.Created != 0 {
		t.Fatalf("%d allocations made", tot.Created)
	}
}

// A live allocation outlives its credential: Refresh and a new permission
// work past the expiry, while the same credential opens nothing new.
func TestAllocationOutlivesCredential(t *testing.T) {
	e := start(t, turnsvc.Options{})
	cred := e.srv.Credential("box-1", "space")
	c := e.dial(t, "udp", cred)
	relay := c.allocate(t)
	exchange(t, relay, peer(t), []byte("before"), []byte("ok"))

	e.clock.Advance(3 * time.Hour)
	if !c.refresh(t, cred) {
		t.Fatal("refresh past the credential's expiry refused")
	}
	// A new peer: CreatePermission (and maybe ChannelBind) past expiry.
	exchange(t, relay, peer(t), []byte("after"), []byte("still ok"))

	if r, err := e.dial(t, "udp", cred).Allocate(); err == nil {
		r.Close()
		t.Fatal("an expired credential opened a second allocation")
	}
	if got := metric(t, e.srv, `cua_relay_turn_auth_refused_total{reason="expired"}`); got == 0 {
		t.Fatal("the expired Allocate was not counted")
	}
}

// Allocations are capped per computer and in total; a closed one frees
// its place.
func TestQuota(t *testing.T) {
	e := start(t, turnsvc.Options{MaxAllocationsPerComputer: 2, MaxAllocations: 3})
	alloc := func(computer string) (net.PacketConn, error) {
		return e.dial(t, "udp", e.srv.Credential(computer, "viewer")).Allocate()
	}
	var first net.PacketConn
	for i := range 2 {
		r, err := alloc("box-a")
		if err != nil {
			t.Fatalf("allocation %d of box-a: %v", i+1, err)
		}
		t.Cleanup(func() { r.Close() })
		first = r
	}
	if r, err := alloc("box-a"); err == nil {
		r.Close()
		t.Fatal("a third allocation of box-a past its quota of 2")
	}
	rb, err := alloc("box-b")
	if err != nil {
		t.Fatalf("box-b: %v", err)
	}
	t.Cleanup(func() { rb.Close() })
	if r, err := alloc("box-c"); err == nil {
		r.Close()
		t.Fatal("a fourth allocation past the total of 3")
	}
	if got := metric(t, e.srv, `cua_relay_turn_allocations_refused_total{reason="quota"}`); got != 2 {
		t.Fatalf("quota refusals: %d, want 2", got)
	}
	if got := metric(t, e.srv, "cua_relay_turn_allocations"); got != 3 {
		t.Fatalf("live allocations: %d, want 3", got)
	}
	first.Close()
	eventually(t, "box-a's allocation ends", func() bool { return e.srv.ComputerStats("box-a").Live == 1 })
	r, err := alloc("box-c")
	if err != nil {
		t.Fatalf("box-c once a place is free: %v", err)
	}
	r.Close()
}

// The metrics name each computer's counters.
func TestMetricsPerComputer(t *testing.T) {
	e := start(t, turnsvc.Options{})
	relay := e.dial(t, "tcp", e.srv.Credential("box-m", "viewer")).allocate(t)
	out := []byte("twelve bytes")
	sends := exchange(t, relay, peer(t), out, []byte("five!"))
	for series, want := range map[string]int64{
		`cua_relay_turn_computer_allocations{computer="box-m"}`:                       1,
		`cua_relay_turn_computer_allocations_created_total{computer="box-m"}`:         1,
		`cua_relay_turn_computer_bytes_total{computer="box-m",direction="to_peer"}`:   int64(sends * len(out)),
		`cua_relay_turn_computer_bytes_total{computer="box-m",direction="from_peer"}`: 5,
		`cua_relay_turn_bytes_total{direction="from_peer"}`:                           5,
		`cua_relay_turn_connections`:                                                  1,
	} {
		if got := metric(t, e.srv, series); got != want {
			t.Errorf("%s = %d, want %d", series, got, want)
		}
	}
}

// Close ends the clients' TCP and TLS connections too (pion closes only
// its listeners).
func TestCloseEndsConnections(t *testing.T) {
	e := start(t, turnsvc.Options{})
	cred := e.srv.Credential("box-1", "viewer")
	e.dial(t, "tcp", cred).allocate(t)
	raw, err := net.Dial("tcp", e.srv.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	eventually(t, "two connections", func() bool { return metric(t, e.srv, "cua_relay_turn_connections") == 2 })
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read after Close: %v, want the connection closed", err)
	}
	if got := e.srv.TotalStats().Live; got != 0 {
		t.Fatalf("%d allocations after Close", got)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Past MaxConns, a TCP connection is closed at once, and counted.
func TestConnectionCap(t *testing.T) {
	e := start(t, turnsvc.Options{MaxConns: 1})
	e.dial(t, "tcp", e.srv.Credential("box-1", "viewer")).allocate(t)
	extra, err := net.Dial("tcp", e.srv.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a connection past the cap: read %v, want it closed", err)
	}
	if got := metric(t, e.srv, "cua_relay_turn_connections_refused_total"); got != 1 {
		t.Fatalf("refused connections: %d, want 1", got)
	}
}

// With a relay port range, every allocation's port is in it.
func TestRelayPortRange(t *testing.T) {
	e := start(t, turnsvc.Options{RelayPortMin: 40100, RelayPortMax: 40110})
	for range 3 {
		relay := e.dial(t, "udp", e.srv.Credential("box-1", "viewer")).allocate(t)
		if p := relay.LocalAddr().(*net.UDPAddr).Port; p < 40100 || p > 40110 {
			t.Fatalf("relayed port %d, outside 40100-40110", p)
		}
	}
	if _, err := turnsvc.New(t.Context(), turnsvc.Options{UDPAddr: "127.0.0.1:0", Secret: secret, RelayPortMin: 5000}); err == nil {
		t.Fatal("a range with no end passed")
	}
}
