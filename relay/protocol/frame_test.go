package protocol_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

func dataToken(t testing.TB) string {
	tok, err := protocol.NewToken(protocol.TokenData)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func goodMessages(t testing.TB) []protocol.Message {
	pub, _ := testKey()
	return []protocol.Message{
		protocol.NewHello("dev-box", "0.9.1 (abc123)"),
		protocol.Welcome{Version: protocol.Version, GrantKey: pub, Heartbeat: protocol.MillisOf(protocol.DefaultHeartbeat), Node: "relay-1", Computer: "space-1"},
		protocol.Ping{Nonce: 1<<64 - 1, SentAt: t0.UnixMilli()},
		protocol.Pong{Nonce: 7, SentAt: t0.UnixMilli()},
		protocol.GoAway{Reason: protocol.CloseGoingAway, Message: "restarting", RetryAfter: 2500},
		protocol.OpenData{Token: dataToken(t), Path: "/v1/data/abc"},
		protocol.Kick{Person: "u_42", Reason: protocol.CloseKicked, Message: "unshared"},
		protocol.Kick{Person: protocol.KickAll, Reason: protocol.CloseKicked},
		protocol.Close{Code: protocol.CloseTokenRotated},
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := protocol.NewWriter(&buf, protocol.DefaultWriteTimeout)
	want := goodMessages(t)
	for _, m := range want {
		if err := w.WriteMessage(m); err != nil {
			t.Fatalf("WriteMessage(%T): %v", m, err)
		}
	}
	r := protocol.NewReader(&buf)
	for _, m := range want {
		got, err := r.ReadMessage()
		if err != nil {
			t.Fatalf("ReadMessage (want %T): %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("ReadMessage = %#v, want %#v", got, m)
		}
	}
	if _, err := r.ReadMessage(); err != io.EOF {
		t.Fatalf("ReadMessage at the end: %v, want io.EOF", err)
	}
}

func frameBytes(typ byte, payload string) []byte {
	b := []byte{typ}
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// TestReadMessageRefuses: each bad frame is refused with its kind, and the
// close code the session should answer it with.
func TestReadMessageRefuses(t *testing.T) {
	oversized := []byte{byte(protocol.FrameHello)}
	oversized = binary.BigEndian.AppendUint32(oversized, protocol.MaxFrameSize+1)
	huge := []byte{byte(protocol.FrameHello), 0xff, 0xff, 0xff, 0xff} // no 4 GiB allocation
	goodHello := `{"min_version":1,"max_version":1,"computer":"box","daemon_version":"1"}`
	goodKey := base64.StdEncoding.EncodeToString(make([]byte, ed25519.PublicKeySize))
	for _, tt := range []struct {
		name string
		in   []byte
		code protocol.CloseCode
		want string
	}{
		{"truncated header", frameBytes(1, goodHello)[:3], protocol.CloseProtocolError, "truncated"},
		{"truncated payload", frameBytes(1, goodHello)[:20], protocol.CloseProtocolError, "truncated"},
		{"oversized", oversized, protocol.CloseTooLarge, "over the"},
		{"4 GiB", huge, protocol.CloseTooLarge, "over the"},
		{"unknown type", frameBytes(99, "{}"), protocol.CloseProtocolError, "unknown frame type"},
		{"type zero", frameBytes(0, "{}"), protocol.CloseProtocolError, "unknown frame type"},
		{"not JSON", frameBytes(1, "hello"), protocol.CloseProtocolError, "hello frame"},
		{"unknown field", frameBytes(1, strings.TrimSuffix(goodHello, "}")+`,"token":"x"}`), protocol.CloseProtocolError, "unknown field"},
		{"trailing data", frameBytes(1, goodHello+"{}"), protocol.CloseProtocolError, "after the JSON"},
		{"bad computer", frameBytes(1, `{"min_version":1,"max_version":1,"computer":"-x","daemon_version":"1"}`), protocol.CloseProtocolError, "computer name"},
		{"welcome without computer", frameBytes(2, `{"version":1,"grant_key":"`+goodKey+`","heartbeat_ms":15000,"node":"n"}`), protocol.CloseProtocolError, "computer name"},
		{"version zero", frameBytes(1, `{"min_version":0,"max_version":1,"computer":"box","daemon_version":"1"}`), protocol.CloseProtocolError, "min_version 0"},
		{"versions backwards", frameBytes(1, `{"min_version":3,"max_version":2,"computer":"box","daemon_version":"1"}`), protocol.CloseProtocolError, "above max_version"},
		{"short grant key", frameBytes(2, `{"version":1,"grant_key":"AAAA","heartbeat_ms":15000,"node":"n"}`), protocol.CloseProtocolError, "grant_key: 3 bytes"},
		{"heartbeat too fast", frameBytes(2, `{"version":1,"grant_key":"`+strings.Repeat("A", 43)+`=","heartbeat_ms":10,"node":"n"}`), protocol.CloseProtocolError, "heartbeat_ms 10"},
		{"retry after a day", frameBytes(5, `{"reason":4006,"retry_after_ms":86400000}`), protocol.CloseProtocolError, "retry_after_ms"},
		{"negative retry", frameBytes(5, `{"reason":4006,"retry_after_ms":-1}`), protocol.CloseProtocolError, "retry_after_ms"},
		{"reason outside range", frameBytes(8, `{"code":1000}`), protocol.CloseProtocolError, "close code 1000"},
		{"open data with a user token", frameBytes(6, `{"token":"cuau_x","path":"/d"}`), protocol.CloseProtocolError, "data token"},
		{"open data to a host", frameBytes(6, `{"token":"`+dataToken(t)+`","path":"//evil.example/d"}`), protocol.CloseProtocolError, "absolute URL path"},
		{"open data with dot-dot", frameBytes(6, `{"token":"`+dataToken(t)+`","path":"/d/../admin"}`), protocol.CloseProtocolError, ".. segments"},
		{"open data with a query", frameBytes(6, `{"token":"`+dataToken(t)+`","path":"/d?x=1"}`), protocol.CloseProtocolError, "no query"},
		{"kick nobody", frameBytes(7, `{"person":"","reason":4007}`), protocol.CloseProtocolError, "person"},
		{"control character", frameBytes(8, `{"code":4000,"message":"a\u0007b"}`), protocol.CloseProtocolError, "message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := protocol.NewReader(bytes.NewReader(tt.in)).ReadMessage()
			if err == nil {
				t.Fatalf("ReadMessage = %#v, nil", m)
			}
			if api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadMessage: %v (kind %s), want invalid_argument saying %q", err, api.KindOf(err), tt.want)
			}
			if c := protocol.CloseCodeFor(err); c != tt.code {
				t.Fatalf("CloseCodeFor(%v) = %s, want %s", err, c, tt.code)
			}
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, m := range []protocol.Message{
		nil,
		protocol.Hello{MinVersion: 1, MaxVersion: 1, Computer: "box"}, // no daemon version
		protocol.Welcome{Version: 1, GrantKey: make(ed25519.PublicKey, 31), Heartbeat: 15000, Node: "n", Computer: "c"},
		protocol.OpenData{Token: "cuad_short", Path: "/d"},
		protocol.GoAway{Reason: protocol.CloseGoingAway, Message: strings.Repeat("x", protocol.MaxTextLen+1)},
		protocol.Close{},
	} {
		if _, err := protocol.Encode(m); api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("Encode(%#v): %v, want invalid_argument", m, err)
		}
	}
	if _, err := protocol.AppendFrame(nil, protocol.Frame{Type: protocol.FramePing, Payload: make([]byte, protocol.MaxFrameSize+1)}); protocol.CloseCodeFor(err) != protocol.CloseTooLarge {
		t.Errorf("AppendFrame of an oversized payload: %v, want too_large", err)
	}
}

func TestNegotiate(t *testing.T) {
	for _, tt := range []struct {
		min, max, want int // want 0: refused
	}{
		{protocol.MinVersion, protocol.Version, protocol.Version},
		{protocol.MinVersion, 200, protocol.Version}, // a newer Space that still speaks ours
		{protocol.Version, protocol.Version, protocol.Version},
		{protocol.Version + 1, 200, 0}, // a Space that dropped ours
	} {
		h := protocol.Hello{MinVersion: tt.min, MaxVersion: tt.max, Computer: "box", DaemonVersion: "1"}
		v, err := protocol.Negotiate(h)
		if tt.want == 0 {
			if err == nil || protocol.CloseCodeFor(err) != protocol.CloseUnsupportedVersion || api.KindOf(err) != api.KindInvalidArgument {
				t.Errorf("Negotiate(%d..%d) = %d, %v; want unsupported_version", tt.min, tt.max, v, err)
			}
			continue
		}
		if err != nil || v != tt.want || !h.Accepts(v) {
			t.Errorf("Negotiate(%d..%d) = %d, %v; want %d", tt.min, tt.max, v, err, tt.want)
		}
	}
}

// TestWriterDeadline: a peer that never reads cannot hold a writer: the
// write fails once the timeout passes, with kind relay.
func TestWriterDeadline(t *testing.T) {
	a, b := net.Pipe() // synchronous: a write blocks until read
	defer a.Close()
	defer b.Close()
	w := protocol.NewWriter(a, 50*time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- w.WriteMessage(protocol.Ping{Nonce: 1}) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second): // 200 times the deadline: the write is unbounded
		a.Close()
		t.Fatalf("WriteMessage still blocked 10 s past a 50 ms write timeout: %v", <-done)
	}
	if api.KindOf(err) != api.KindRelay || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("WriteMessage to a peer that does not read: %v, want kind relay wrapping a deadline", err)
	}
}

// TestWriterConcurrent: frames written from several goroutines arrive
// whole, never interleaved.
func TestWriterConcurrent(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	w := protocol.NewWriter(a, protocol.DefaultWriteTimeout)
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				if err := w.WriteMessage(protocol.Ping{Nonce: uint64(i*each + j)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	r := protocol.NewReader(b)
	seen := map[uint64]bool{}
	for range writers * each {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		seen[m.(protocol.Ping).Nonce] = true
	}
	wg.Wait()
	if len(seen) != writers*each {
		t.Fatalf("read %d distinct pings, want %d", len(seen), writers*each)
	}
}

func TestOpenDataLogValueHidesToken(t *testing.T) {
	m := protocol.OpenData{Token: dataToken(t), Path: "/d/1"}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("open", "msg", m)
	if strings.Contains(buf.String(), m.Token) || !strings.Contains(buf.String(), "/d/1") {
		t.Fatalf("log line %q: want the path, not the token", buf.String())
	}
}

// FuzzReadMessage: any bytes read as messages or answer an error of kind
// invalid_argument (or io.EOF at the end); what reads encodes again to a
// message that reads the same.
func FuzzReadMessage(f *testing.F) {
	for _, m := range goodMessages(f) {
		fr, err := protocol.Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := protocol.AppendFrame(nil, fr)
		f.Add(b)
	}
	f.Add(frameBytes(99, "{}"))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := protocol.NewReader(bytes.NewReader(b))
		for {
			m, err := r.ReadMessage()
			if err == io.EOF {
				return
			}
			if err != nil {
				if api.KindOf(err) != api.KindInvalidArgument {
					t.Fatalf("%q: error of kind %s: %v", b, api.KindOf(err), err)
				}
				return
			}
			fr, err := protocol.Encode(m)
			if err != nil {
				t.Fatalf("%q read as %#v, which does not encode: %v", b, m, err)
			}
			m2, err := protocol.Decode(fr)
			if err != nil || !reflect.DeepEqual(m, m2) {
				t.Fatalf("%q read as %#v, which round-trips to %#v, %v", b, m, m2, err)
			}
		}
	})
}
