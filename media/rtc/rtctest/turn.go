package rtctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/turn/v5"
	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
)

// TURN is a real TURN server (pion/turn) on 127.0.0.1, over UDP, TCP and
// TLS (a self-signed certificate), with one static credential: what
// cua-relay's TURN is to a Space and a viewer, in a test.
type TURN struct {
	UDP, TCP, TLS      string // host:port of each listener
	Username, Password string
	// Cert is the TLS listener's certificate (DER), self-signed for
	// 127.0.0.1.
	Cert []byte

	mu     sync.Mutex
	allocs map[string]int // by listener: "udp", "tcp", "tls"
}

// turnRealm is the test server's realm (any will do: the client learns
// it from the server's first answer).
const turnRealm = "cua.test"

// StartTURN runs a TURN server until the test ends.
func StartTURN(t testing.TB) *TURN {
	t.Helper()
	s := &TURN{Username: "1999999999:test:viewer", Password: "secret-" + rand.Text(), allocs: map[string]int{}}
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cert, key := selfSigned(t)
	s.Cert = cert
	tl, err := tls.Listen("tcp4", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{cert}, PrivateKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	s.UDP, s.TCP, s.TLS = udp.LocalAddr().String(), tcp.Addr().String(), tl.Addr().String()
	listener := map[string]string{s.UDP: "udp", s.TCP: "tcp", s.TLS: "tls"}
	relay := func() turn.RelayAddressGenerator {
		return &turn.RelayAddressGeneratorStatic{RelayAddress: net.IPv4(127, 0, 0, 1), Address: "127.0.0.1"}
	}
	authKey := turn.GenerateAuthKey(s.Username, turnRealm, s.Password)
	srv, err := turn.NewServer(turn.ServerConfig{
		Realm: turnRealm,
		// Quiet: a refused handshake is what some tests are about.
		LoggerFactory: &logging.DefaultLoggerFactory{DefaultLogLevel: logging.LogLevelDisabled},
		AuthHandler: func(ra *turn.RequestAttributes) (string, []byte, bool) {
			if ra.Username != s.Username {
				return "", nil, false
			}
			return ra.Username, authKey, true
		},
		EventHandler: turn.EventHandler{
			OnAllocationCreated: func(_, dst net.Addr, _, _, _ string, _ net.Addr, _ int) {
				s.mu.Lock()
				s.allocs[listener[dst.String()]]++
				s.mu.Unlock()
			},
		},
		PacketConnConfigs: []turn.PacketConnConfig{{PacketConn: udp, RelayAddressGenerator: relay()}},
		ListenerConfigs:   []turn.ListenerConfig{{Listener: tcp, RelayAddressGenerator: relay()}, {Listener: tl, RelayAddressGenerator: relay()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Allocations counts the allocations made through a listener ("udp",
// "tcp" or "tls").
func (s *TURN) Allocations(listener string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allocs[listener]
}

// ICEServers spells the server as one ICE server, over the listeners
// named ("udp", "tcp", "tls"), as cua-relay's TurnCredential does.
func (s *TURN) ICEServers(listeners ...string) []api.ICEServer {
	var urls []string
	for _, l := range listeners {
		switch l {
		case "udp":
			urls = append(urls, "turn:"+s.UDP+"?transport=udp")
		case "tcp":
			urls = append(urls, "turn:"+s.TCP+"?transport=tcp")
		case "tls":
			urls = append(urls, "turns:"+s.TLS+"?transport=tcp")
		}
	}
	return []api.ICEServer{{URLs: urls, Username: s.Username, Credential: s.Password}}
}

// PinnedTLS trusts the TLS listener by its certificate's fingerprint
// alone, as a Space trusts a relay it was attached to with a pin.
func (s *TURN) PinnedTLS() *tls.Config {
	want := sha256.Sum256(s.Cert)
	return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || sha256.Sum256(cs.PeerCertificates[0].Raw) != want {
				return errors.New("not the pinned certificate")
			}
			return nil
		}}
}

// selfSigned makes a certificate for 127.0.0.1 that is its own CA.
func selfSigned(t testing.TB) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "turn.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// relayedOnly drops every candidate of an SDP but the relayed ones, so
// that the media can only cross a TURN server whatever the other end
// gathered (a browser that reaches the Space by no address of its own).
func relayedOnly(sdp string) string {
	lines := strings.SplitAfter(sdp, "\n")
	out := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(l, "a=candidate:") && !strings.Contains(l, " typ relay") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// Pair is the candidate pair a receiver's ICE selected, from its stats.
type Pair struct {
	Local, Remote webrtc.ICECandidateType
	// LocalRelayProtocol is how the receiver's relayed candidate reaches
	// its TURN server (udp, tcp, tls), "" for another type.
	LocalRelayProtocol string
}

// SelectedPair reads the nominated, succeeded candidate pair of the
// receiver's stats (ok false while there is none).
func (r *Receiver) SelectedPair() (Pair, bool) {
	stats := r.PC.GetStats()
	for _, st := range stats {
		ps, isPair := st.(webrtc.ICECandidatePairStats)
		if !isPair || !ps.Nominated || ps.State != webrtc.StatsICECandidatePairStateSucceeded {
			continue
		}
		l, lok := stats[ps.LocalCandidateID].(webrtc.ICECandidateStats)
		rc, rok := stats[ps.RemoteCandidateID].(webrtc.ICECandidateStats)
		if lok && rok {
			return Pair{Local: l.CandidateType, Remote: rc.CandidateType, LocalRelayProtocol: l.RelayProtocol}, true
		}
	}
	return Pair{}, false
}

// WaitPath waits for the daemon's path message on the control channel
// (the receiver must have opened it), skipping the others.
func (r *Receiver) WaitPath(t testing.TB, timeout time.Duration) api.StreamPath {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m := <-r.Messages[api.ChannelControl]:
			var c api.ViewerControl
			if json.Unmarshal([]byte(m), &c) == nil && c.Type == api.ControlPath && c.Path != nil {
				return *c.Path
			}
		case <-deadline:
			t.Fatalf("no path message within %s", timeout)
		}
	}
}
