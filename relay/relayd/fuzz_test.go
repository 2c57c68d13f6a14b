package relayd

import (
	"bytes"
	"net"
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
