package relayd

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// The start of a control session, fed with arbitrary bytes through an
// in-memory pipe, as a Space's control stream would bring them: readHello
// answers a Hello of a version both speak, or an error with a kind and a
// close code; it never panics, and it never waits for more than it needs.
func FuzzHandshake(f *testing.F) {
	hello, _ := protocol.Encode(protocol.NewHello("", "1.0"))
	good, _ := protocol.AppendFrame(nil, hello)
	named, _ := protocol.Encode(protocol.NewHello("box-1", "1.0"))
	goodNamed, _ := protocol.AppendFrame(nil, named)
	ping, _ := protocol.Encode(protocol.Ping{Nonce: 1})
	pingFrame, _ := protocol.AppendFrame(nil, ping)
	f.Add(good)
	f.Add(goodNamed)
	f.Add(pingFrame)
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Add(append([]byte{1, 0, 0, 0, 50}, []byte(`{"min_version":9,"max_version":9,"daemon_version":"x"}`)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		space, relay := net.Pipe()
		defer relay.Close()
		go func() {
			_, _ = space.Write(b)
			space.Close() // the Space says no more
		}()
		_ = relay.SetReadDeadline(time.Now().Add(5 * time.Second))
		h, v, err := readHello(relay)
		if err != nil {
			e := api.AsError(err)
			if e.Kind == "" || e.Message == "" {
				t.Fatalf("an error without a kind or message: %#v", err)
			}
			if c := protocol.CloseCodeFor(err); !c.Known() || c == protocol.CloseNormal {
				t.Fatalf("close code %s for %v", c, err)
			}
			return
		}
		if v < protocol.MinVersion || v > protocol.Version || !h.Accepts(v) {
			t.Fatalf("negotiated %d for %+v", v, h)
		}
		if !bytes.HasPrefix(b, []byte{byte(protocol.FrameHello)}) {
			t.Fatalf("a hello from a frame of type %d", b[0])
		}
	})
}

// The path of a relayed request: whatever the caller sends, the daemon
// path starts with "/" and the name is one segment of the escaped path
// (a %2F in it is the store's to refuse, as any bad name).
func FuzzSplitComputerPath(f *testing.F) {
	for _, s := range []string{"/c/box/v1/exec", "/c/box", "/c/", "/c/%2e%2e/v1", "/c/a%2Fb/x", "/c/box/v1/files/content%3Fx", "/x", "/c/box/%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, path, raw, err := splitComputerPath(s)
		if err != nil {
			if api.AsError(err).Kind == "" {
				t.Fatalf("an error without a kind: %v", err)
			}
			return
		}
		if !strings.HasPrefix(path, "/") || !strings.HasPrefix(raw, "/") {
			t.Fatalf("%q: daemon path %q (raw %q) is not absolute", s, path, raw)
		}
		if !strings.HasPrefix(s, "/c/") || strings.Contains(name, "/") && !strings.Contains(strings.ToLower(s), "%2f") {
			t.Fatalf("%q: name %q was not one path segment", s, name)
		}
	})
}

// Which requests a link holder may make: whatever the method and path, a
// link route is a clean path of one of the stream routes (or the viewer's
// files) with its own method, and an {id} is one segment.
func FuzzClassifyLink(f *testing.F) {
	for _, s := range [][2]string{
		{"GET", "/viewer/"}, {"HEAD", "/viewer/main.js"}, {"GET", "/viewer/../v1/exec"}, {"GET", "/viewer"},
		{"GET", "/v1/stream/ice"}, {"GET", "/v1/stream/ice/"}, {"POST", "/v1/stream/screen"},
		{"POST", "/v1/stream/windows/12"}, {"POST", "/v1/stream/windows/1/2"}, {"POST", "/v1/stream/windows/"},
		{"DELETE", "/v1/stream/sessions/abc"}, {"DELETE", "/v1/stream/sessions/.."}, {"PUT", "/v1/stream/screen"},
		{"GET", "/viewer//x"}, {"GET", "viewer/"}, {"POST", "/v1/stream/./screen"}, {"GET", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		route := classifyLink(method, path)
		if route == notLink {
			return
		}
		if !cleanPath(path) || strings.Contains(path, "//") || strings.Contains("/"+path+"/", "/../") || strings.Contains("/"+path+"/", "/./") {
			t.Fatalf("%s %q: a link route that is not clean (%d)", method, path, route)
		}
		oneID := func(prefix string) bool {
			id, ok := strings.CutPrefix(path, prefix)
			return ok && id != "" && !strings.Contains(id, "/")
		}
		var ok bool
		switch route {
		case linkViewer:
			ok = (method == "GET" || method == "HEAD") && strings.HasPrefix(path, api.PathViewer)
		case linkICE:
			ok = method == "GET" && path == api.PathStreamICE
		case linkOffer:
			ok = method == "POST" && (path == api.PathStreamScreen || oneID("/v1/stream/windows/"))
		case linkSession:
			ok = method == "DELETE" && oneID("/v1/stream/sessions/")
		}
		if !ok {
			t.Fatalf("%s %q: classified %d", method, path, route)
		}
	})
}

// The Space's answer of the ICE route, whatever its bytes: an error, or
// the same JSON object with the relay's servers after the Space's own.
func FuzzAppendICEServers(f *testing.F) {
	for _, s := range []string{
		`{"ice_servers":[]}`, `{"ice_servers":null}`, `{}`, `null`, `[]`, `{"ice_servers":[{"urls":["stun:x:1"]}],"x":{"y":[1,2]}}`,
		`{"ice_servers":{}}`, `{"ice_servers":[1,"a",null]}`, `{"a":1}{"b":2}`, ``, `{"ice_servers":[]} `,
	} {
		f.Add([]byte(s))
	}
	add := protocol.TurnCredential{Username: "1:box:viewer", Password: "pw", UDPPort: 3478}.ICEServers("relay.example")
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := appendICEServers(b, add)
		if err != nil {
			return
		}
		var in, got map[string]json.RawMessage
		if json.Unmarshal(b, &in) != nil || json.Unmarshal(out, &got) != nil || got == nil {
			t.Fatalf("%q: answered %q", b, out)
		}
		var before, after []json.RawMessage
		_ = json.Unmarshal(in["ice_servers"], &before)
		if err := json.Unmarshal(got["ice_servers"], &after); err != nil || len(after) != len(before)+len(add) {
			t.Fatalf("%q: ice_servers %s (%v)", b, got["ice_servers"], err)
		}
		var last api.ICEServer
		if err := json.Unmarshal(after[len(after)-1], &last); err != nil || last.Username != "1:box:viewer" || len(last.URLs) != 1 {
			t.Fatalf("%q: the relay's server: %s", b, after[len(after)-1])
		}
		for k := range in {
			if _, ok := got[k]; !ok {
				t.Fatalf("%q: field %q lost", b, k)
			}
		}
	})
}

// The tokenBucket never lets more than burst + rate*elapsed through, and
// always says how long to wait when it refuses.
func FuzzTokenBucket(f *testing.F) {
	f.Add(uint8(20), uint8(40), []byte{0, 0, 0, 10, 200, 0, 1})
	f.Add(uint8(1), uint8(1), []byte{255, 255, 0})
	f.Fuzz(func(t *testing.T, rate, burst uint8, steps []byte) {
		if rate == 0 || burst == 0 {
			return
		}
		var b tokenBucket
		start := time.Unix(1_700_000_000, 0)
		now, taken := start, 0
		for _, s := range steps {
			now = now.Add(time.Duration(s) * 10 * time.Millisecond)
			ok, wait := b.take(now, float64(rate), int(burst))
			if ok {
				taken++
			} else if wait <= 0 {
				t.Fatalf("refused with a wait of %s", wait)
			}
			if limit := float64(burst) + now.Sub(start).Seconds()*float64(rate); float64(taken) > limit+1e-6 {
				t.Fatalf("%d taken by %s, over %f", taken, now.Sub(start), limit)
			}
		}
	})
}

// The host a viewer reached the relay by, from any Host header: "", an
// IP address, or a DNS name, never with a port or brackets; and the host
// of a well-formed host:port as it is, when it is one of those.
func FuzzRequestHost(f *testing.F) {
	for _, s := range []string{"relay.example.com:8443", "relay.example.com", "[::1]:8443", "[::1]", "::1", "", ":443", "[", "a:b:c", "127.0.0.1:0", "[[]]", "a/b?c:1", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := requestHost(s)
		if h == "" {
			return
		}
		if _, err := netip.ParseAddr(h); err != nil && strings.ContainsAny(h, ":[]/?#@% ") {
			t.Fatalf("%q: host %q is no address and no name", s, h)
		}
		if host, _, err := net.SplitHostPort(s); err == nil && h != host {
			t.Fatalf("%q: host %q, want %q", s, h, host)
		}
	})
}

// A drain's body (the admin socket's POST /admin/drain): any bytes give
// a reconnect delay and a grace within their bounds, or invalid_argument;
// never a wrapped duration.
func FuzzDrainParams(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"retry_after_ms":2000,"grace_ms":30000}`, `{"retry_after_ms":-1}`,
		`{"grace_ms":9223372036854775807}`, `{"retry_after_ms":3600000}`, `{"retry_after_ms":1}{}`, `{"other":1}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := http.NewRequest(http.MethodPost, "http://relay-admin/admin/drain", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		retry, grace, err := drainParams(r)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: %v, want invalid_argument", body, err)
			}
			return
		}
		if retry < 0 || retry > protocol.MaxRetryAfter || grace < 0 || grace > MaxDrainGrace {
			t.Fatalf("%q: retry %v grace %v out of bounds", body, retry, grace)
		}
		if len(body) == 0 && (retry != DefaultDrainRetryAfter || grace != DefaultDrainGrace) {
			t.Fatalf("no body: retry %v grace %v, want the defaults", retry, grace)
		}
	})
}
