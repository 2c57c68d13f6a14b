package protocol

import (
	"fmt"
	"net"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
)

// TURN credentials follow the TURN REST convention
// (draft-uberti-behave-turn-rest): Username is "<expiry, Unix seconds>:
// <computer>:<who>" and Password is base64(HMAC-SHA1(the relay's TURN
// secret, Username)), so that the TURN server checks one without a
// lookup. The relay mints one per view for each end: the viewer's comes
// with the ICE servers it asks for (GET /c/<computer>/v1/stream/ice), the
// Space's in the grant of the stream that carries the viewer's offer.
const (
	// MaxTurnUsernameLen bounds TurnCredential.Username.
	MaxTurnUsernameLen = 256
	// maxTurnPasswordLen bounds TurnCredential.Password (an HMAC-SHA1 in
	// base64 is 28 bytes).
	maxTurnPasswordLen = 64
)

// TurnCredential is one end's TURN credential for one view, and where the
// relay's TURN server listens.
type TurnCredential struct {
	Username string `json:"username"`
	Password string `json:"password"`
	// Host is the TURN server's host; "" means the host the Space dialled
	// the relay by (the relay's TURN runs beside its HTTPS).
	Host string `json:"host,omitempty"`
	// Ports of the TURN listeners, 0 for one the relay does not run: UDP,
	// TCP, and TLS over TCP (for networks that allow only TLS).
	UDPPort int `json:"udp,omitempty"`
	TCPPort int `json:"tcp,omitempty"`
	TLSPort int `json:"tls,omitempty"`
}

func (t TurnCredential) check() string {
	switch {
	case t.Username == "" || len(t.Username) > MaxTurnUsernameLen || !isText(t.Username):
		return fmt.Sprintf("username must be 1 to %d bytes of text", MaxTurnUsernameLen)
	case t.Password == "" || len(t.Password) > maxTurnPasswordLen || !isText(t.Password):
		return fmt.Sprintf("password must be 1 to %d bytes of text", maxTurnPasswordLen)
	case len(t.Host) > 253 || !isText(t.Host):
		return "host is not a host name or address"
	case t.UDPPort == 0 && t.TCPPort == 0 && t.TLSPort == 0:
		return "no TURN port"
	}
	for _, p := range []int{t.UDPPort, t.TCPPort, t.TLSPort} {
		if p < 0 || p > 65535 {
			return fmt.Sprintf("port %d out of range", p)
		}
	}
	return ""
}

// ICEServers spells t as the ICE servers of a peer connection: TURN over
// UDP, TCP and TLS, each that the relay runs, on t.Host or else
// defaultHost (the host the relay was reached by).
func (t TurnCredential) ICEServers(defaultHost string) []api.ICEServer {
	host := t.Host
	if host == "" {
		host = defaultHost
	}
	var urls []string
	add := func(scheme string, port int, transport string) {
		if port != 0 {
			urls = append(urls, scheme+":"+net.JoinHostPort(host, strconv.Itoa(port))+"?transport="+transport)
		}
	}
	add("turn", t.UDPPort, "udp")
	add("turn", t.TCPPort, "tcp")
	add("turns", t.TLSPort, "tcp")
	if len(urls) == 0 {
		return nil
	}
	return []api.ICEServer{{URLs: urls, Username: t.Username, Credential: t.Password}}
}
