package protocol_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

func TestHeaderRoundTrip(t *testing.T) {
	_, priv := testKey()
	g, err := protocol.SignGrant(priv, protocol.NewGrant("box", "u_1", "Ada", protocol.RoleOwner, t0))
	if err != nil {
		t.Fatal(err)
	}
	for _, grant := range [][]byte{g, {1}, bytes.Repeat([]byte{7}, protocol.MaxGrantSize)} {
		var buf bytes.Buffer
		if err := protocol.WriteHeader(&buf, protocol.Header{Kind: protocol.StreamHTTP, Grant: grant}); err != nil {
			t.Fatal(err)
		}
		if buf.Len() > protocol.MaxHeaderSize {
			t.Fatalf("a header of %d bytes, over MaxHeaderSize", buf.Len())
		}
		buf.WriteString("GET /health HTTP/1.1\r\n") // the stream's own bytes follow
		h, err := protocol.ReadHeader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if h.Version != protocol.Version || h.Kind != protocol.StreamHTTP || !bytes.Equal(h.Grant, grant) {
			t.Fatalf("ReadHeader = %+v", h)
		}
		if rest, _ := io.ReadAll(&buf); string(rest) != "GET /health HTTP/1.1\r\n" {
			t.Fatalf("ReadHeader read into the stream: %q left", rest)
		}
	}
}

func header(magic string, version, kind byte, n uint16, grant string) []byte {
	b := append([]byte(magic), version, kind)
	b = binary.BigEndian.AppendUint16(b, n)
	return append(b, grant...)
}

func TestReadHeaderRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
		code protocol.CloseCode
		want string
	}{
		{"empty", nil, protocol.CloseProtocolError, "truncated"},
		{"truncated fixed part", header("CUAR", 1, 1, 3, "abc")[:5], protocol.CloseProtocolError, "truncated"},
		{"truncated grant", header("CUAR", 1, 1, 3, "ab"), protocol.CloseProtocolError, "truncated"},
		{"bad magic", header("HTTP", 1, 1, 3, "abc"), protocol.CloseProtocolError, "bad magic"},
		{"an HTTP request", []byte("GET / HTTP/1.1\r\n\r\n"), protocol.CloseProtocolError, "bad magic"},
		{"version zero", header("CUAR", 0, 1, 3, "abc"), protocol.CloseUnsupportedVersion, "version 0"},
		{"newer version", header("CUAR", protocol.Version+1, 1, 3, "abc"), protocol.CloseUnsupportedVersion, "version"},
		{"unknown kind", header("CUAR", 1, 9, 3, "abc"), protocol.CloseProtocolError, "kind_9"},
		{"no grant", header("CUAR", 1, 1, 0, ""), protocol.CloseProtocolError, "no grant"},
		{"oversized grant", header("CUAR", 1, 1, protocol.MaxGrantSize+1, ""), protocol.CloseTooLarge, "over the"},
		{"64 KiB grant", header("CUAR", 1, 1, 0xffff, ""), protocol.CloseTooLarge, "over the"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := protocol.ReadHeader(bytes.NewReader(tt.in))
			if err == nil {
				t.Fatalf("ReadHeader = %+v, nil", h)
			}
			if api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadHeader: %v (kind %s), want invalid_argument saying %q", err, api.KindOf(err), tt.want)
			}
			if c := protocol.CloseCodeFor(err); c != tt.code {
				t.Fatalf("CloseCodeFor(%v) = %s, want %s", err, c, tt.code)
			}
		})
	}
}

func TestWriteHeaderRefuses(t *testing.T) {
	for _, h := range []protocol.Header{
		{Kind: protocol.StreamHTTP},
		{Kind: protocol.StreamHTTP, Grant: make([]byte, protocol.MaxGrantSize+1)},
		{Kind: 0, Grant: []byte{1}},
		{Version: protocol.Version + 1, Kind: protocol.StreamHTTP, Grant: []byte{1}},
	} {
		if err := protocol.WriteHeader(io.Discard, h); api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("WriteHeader(%+v): %v, want invalid_argument", h, err)
		}
	}
}

// FuzzReadHeader: any bytes read as a header or answer invalid_argument;
// ReadHeader never reads past MaxHeaderSize, and what it reads writes
// back as the same bytes.
func FuzzReadHeader(f *testing.F) {
	_, priv := testKey()
	g, _ := protocol.SignGrant(priv, protocol.NewGrant("box", "u_1", "Ada", protocol.RoleOwner, t0))
	f.Add(append(header("CUAR", 1, 1, uint16(len(g)), string(g)), "GET / HTTP/1.1\r\n"...))
	f.Add(header("CUAR", 1, 1, 1, "x"))
	f.Add(header("CUAR", 1, 1, 0xffff, "x"))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		h, err := protocol.ReadHeader(r)
		if read := len(b) - r.Len(); read > protocol.MaxHeaderSize {
			t.Fatalf("ReadHeader read %d bytes, over MaxHeaderSize", read)
		}
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: error of kind %s: %v", b, api.KindOf(err), err)
			}
			return
		}
		again, err := protocol.AppendHeader(nil, h)
		if err != nil || !bytes.Equal(again, b[:len(b)-r.Len()]) {
			t.Fatalf("%q read as %+v, which writes as %q, %v", b, h, again, err)
		}
	})
}
