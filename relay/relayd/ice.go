package relayd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// addTURN adds the relay's TURN server, with the viewer's credential cred,
// to the Space's 200 answer of GET /v1/stream/ice (api.StreamICE), on host
// unless cred names its own. What else the Space answered stays as it was,
// fields this build does not know included.
func addTURN(resp *http.Response, cred *protocol.TurnCredential, host string) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxICEBody+1))
	_ = resp.Body.Close()
	if err != nil {
		return api.Errorf(api.KindRelay, "read the Space's ICE servers: %w", err)
	}
	if len(b) > maxICEBody {
		return api.Errorf(api.KindRelay, "the Space's ICE servers: more than %d bytes", maxICEBody)
	}
	out, err := appendICEServers(b, cred.ICEServers(host))
	if err != nil {
		return api.Errorf(api.KindRelay, "the Space's ICE servers: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	resp.Header.Del("Transfer-Encoding")
	resp.TransferEncoding = nil
	// It carries a credential: no cache keeps it.
	resp.Header.Set("Cache-Control", "no-store")
	return nil
}

// appendICEServers appends add to the ice_servers of a StreamICE in JSON,
// keeping the rest of it as it was.
func appendICEServers(b []byte, add []api.ICEServer) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("null, not an object")
	}
	var servers []json.RawMessage
	if raw, ok := obj["ice_servers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil {
			return nil, fmt.Errorf("ice_servers: %w", err)
		}
	}
	if servers == nil {
		servers = []json.RawMessage{} // ice_servers is a list, never null
	}
	for _, s := range add {
		m, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		servers = append(servers, m)
	}
	list, err := json.Marshal(servers)
	if err != nil {
		return nil, err
	}
	obj["ice_servers"] = list
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// requestHost is the host a caller reached the relay by (the Host header
// without its port, an IPv6 address without brackets), or "" when that is
// neither an IP address nor a DNS name: it goes into URLs.
func requestHost(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	} else if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return h
	}
	if !isDNSName(h) {
		return ""
	}
	return h
}

// isDNSName reports whether s is made of DNS labels (letters, digits, '-'
// and '_', dot-separated, at most 253 bytes).
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
