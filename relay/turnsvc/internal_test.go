package turnsvc

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// The relay never relays into its own machine or network unless it sits
// there itself, nor to link-local (cloud metadata) addresses.
func TestPeerAllowed(t *testing.T) {
	for _, c := range []struct {
		relay, peer string
		want        bool
	}{
		{"203.0.113.7", "198.51.100.1", true},
		{"203.0.113.7", "203.0.113.7", true}, // both ends relayed through this relay
		{"203.0.113.7", "127.0.0.1", false},
		{"203.0.113.7", "10.0.0.5", false},
		{"203.0.113.7", "192.168.1.1", false},
		{"203.0.113.7", "169.254.169.254", false},
		{"203.0.113.7", "0.0.0.0", false},
		{"203.0.113.7", "224.0.0.1", false},
		{"203.0.113.7", "255.255.255.255", false},
		{"10.1.2.3", "10.0.0.5", true},
		{"10.1.2.3", "127.0.0.1", false},
		{"127.0.0.1", "127.0.0.2", true},
		{"127.0.0.1", "192.168.1.1", true},
		{"127.0.0.1", "169.254.169.254", false},
	} {
		if got := peerAllowed(net.ParseIP(c.relay), net.ParseIP(c.peer)); got != c.want {
			t.Errorf("relay %s, peer %s: %v, want %v", c.relay, c.peer, got, c.want)
		}
	}
}

func TestRelayAddress(t *testing.T) {
	for _, c := range []struct {
		o          Options
		bind, want string
	}{
		{Options{UDPAddr: "127.0.0.1:3478"}, "127.0.0.1", "127.0.0.1"},
		{Options{UDPAddr: "localhost:3478"}, "127.0.0.1", "127.0.0.1"},
		{Options{UDPAddr: "192.0.2.4:3478", RelayIP: net.ParseIP("203.0.113.9")}, "192.0.2.4", "203.0.113.9"},
		{Options{UDPAddr: ":3478", RelayIP: net.ParseIP("203.0.113.9")}, "0.0.0.0", "203.0.113.9"},
		{Options{TLSAddr: "0.0.0.0:5349"}, "0.0.0.0", firstIPv4().String()},
	} {
		bind, relay, err := relayAddress(c.o)
		if err != nil || bind.String() != c.bind || relay.String() != c.want {
			t.Errorf("%+v: bind %s relay %s (%v), want %s and %s", c.o, bind, relay, err, c.bind, c.want)
		}
	}
	if _, _, err := relayAddress(Options{UDPAddr: ":3478", RelayIP: net.ParseIP("2001:db8::1")}); err == nil {
		t.Error("an IPv6 relay address passed")
	}
}

// The per-computer table drops computers idle past keepIdle, and the
// oldest idle ones past its bound, but never one with an allocation.
func TestMeterTableIsBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	m := newMeter(2, 1, func() time.Time { return now }) // bound: 4 idle
	live, err := m.reserve("live")
	if err != nil {
		t.Fatal(err)
	}
	m.total = 100 // let the others in; the bound stays computed per sweep
	for i := range 10 {
		c, err := m.reserve("c" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		m.release(c)
	}
	m.total = 1
	m.mu.Lock()
	m.sweepLocked()
	n := len(m.computers)
	_, hasLive := m.computers["live"]
	_, hasNewest := m.computers["c9"]
	_, hasOldest := m.computers["c0"]
	m.mu.Unlock()
	if !hasLive || !hasNewest || hasOldest || n > 1+maxIdleFactor*1 {
		t.Fatalf("after the sweep: %d entries (live %v, newest %v, oldest %v)", n, hasLive, hasNewest, hasOldest)
	}
	now = now.Add(keepIdle)
	m.mu.Lock()
	m.sweepLocked()
	n = len(m.computers)
	m.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d entries after keepIdle, want the live one only", n)
	}
	m.release(live)
}
