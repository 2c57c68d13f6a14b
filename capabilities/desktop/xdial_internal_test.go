package desktop

import (
	"bytes"
	"encoding/binary"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

func TestParseDisplay(t *testing.T) {
	local := "/tmp/.X11-unix/X"
	abstract := func(p string) []string {
		if runtime.GOOS == "linux" {
			return []string{p, "@" + p}
		}
		return []string{p}
	}
	ok := []struct {
		in     string
		screen int
		addrs  []string
		net    string
	}{
		{":0", 0, abstract(local + "0"), "unix"},
		{":12.3", 3, abstract(local + "12"), "unix"},
		{"unix:1", 0, abstract(local + "1"), "unix"},
		{"unix/unix:1", 0, abstract(local + "1"), "unix"},
		{"unix/:1", 0, abstract(local + "1"), "unix"},
		{"localhost:2", 0, []string{"localhost:6002"}, "tcp"},
		{"host.example:10.1", 1, []string{"host.example:6010"}, "tcp"},
		{"tcp/10.0.0.1:1", 0, []string{"10.0.0.1:6001"}, "tcp"},
		{"inet6/::1:1", 0, []string{"[::1]:6001"}, "tcp6"},
		{"[::1]:4", 0, []string{"[::1]:6004"}, "tcp"},
		{"/private/tmp/launch-x/org.xquartz:0", 0, []string{"/private/tmp/launch-x/org.xquartz:0"}, "unix"},
		{":059", 0, abstract(local + "59"), "unix"},
	}
	for _, c := range ok {
		d, err := parseDisplay(c.in)
		if err != nil {
			t.Errorf("parseDisplay(%q): %v", c.in, err)
			continue
		}
		if d.screen != c.screen || d.network != c.net || !slices.Equal(d.addresses(), c.addrs) {
			t.Errorf("parseDisplay(%q) = %+v, addresses %v; want screen %d, %s %v", c.in, d, d.addresses(), c.screen, c.net, c.addrs)
		}
	}
	bad := map[string]string{
		"":             "empty",
		"0":            "no ':'",
		":":            "missing",
		":a":           "not a decimal",
		":-1":          "not a decimal",
		":+1":          "not a decimal",
		":1.":          "screen number",
		":1.x":         "screen number",
		":1.256":       "over 255",
		":59536":       "over 59535",
		":000001":      "too long",
		"host::0":      "DECnet",
		"ftp/host:0":   "unknown protocol",
		"unix/other:0": "local socket",
		"tcp/:0":       "needs a host",
		":0\n":         "control character",
		strings.Repeat("a", maxDisplayNameLen) + ":0": "limit",
	}
	for in, want := range bad {
		_, err := parseDisplay(in)
		if api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("parseDisplay(%q) = %v; want invalid_argument saying %q", in, err, want)
		}
	}
}

func FuzzParseDisplay(f *testing.F) {
	for _, s := range []string{":0", ":1.2", "unix:3", "tcp/h:4", "inet6/::1:5", "/a/b:6", "h::7", "", ":", "a/b/c:0.0", "[::1]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDisplay(s)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("parseDisplay(%q): kind %s, want invalid_argument", s, api.KindOf(err))
			}
			return
		}
		if d.number < 0 || d.number > maxDisplayNumber || d.screen < 0 || d.screen > maxScreenNumber {
			t.Fatalf("parseDisplay(%q) = %+v: number or screen out of range", s, d)
		}
		addrs := d.addresses()
		if len(addrs) == 0 {
			t.Fatalf("parseDisplay(%q) = %+v: no address", s, d)
		}
		switch d.network {
		case "unix":
			if d.host != "" {
				t.Fatalf("parseDisplay(%q) = %+v: a socket with a host", s, d)
			}
		case "tcp", "tcp6":
			if d.host == "" {
				t.Fatalf("parseDisplay(%q) = %+v: TCP without a host", s, d)
			}
			if _, _, err := net.SplitHostPort(addrs[0]); err != nil {
				t.Fatalf("parseDisplay(%q): TCP address %q: %v", s, addrs[0], err)
			}
		default:
			t.Fatalf("parseDisplay(%q) = %+v: network %q", s, d, d.network)
		}
	})
}

// encodeXauth writes entries in the Xauthority format (for the tests; the
// daemon never writes the file).
func encodeXauth(entries []xauthEntry) []byte {
	var b []byte
	field := func(v []byte) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
		b = append(b, v...)
	}
	for _, e := range entries {
		b = binary.BigEndian.AppendUint16(b, e.family)
		field(e.address)
		field([]byte(e.number))
		field([]byte(e.name))
		field(e.data)
	}
	return b
}

func TestFindCookie(t *testing.T) {
	cookie := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	local := xauthAddr{family: familyLocal, address: []byte("vm")}
	entries := []xauthEntry{
		{family: familyLocal, address: []byte("vm"), number: "1", name: "XDM-AUTHORIZATION-1", data: cookie(9)},
		{family: familyLocal, address: []byte("other"), number: "1", name: authMagicCookie, data: cookie(1)},
		{family: familyLocal, address: []byte("vm"), number: "2", name: authMagicCookie, data: cookie(2)},
		{family: familyLocal, address: []byte("vm"), number: "1", name: authMagicCookie, data: cookie(3)},
		{family: familyInternet, address: []byte{10, 0, 0, 1}, number: "1", name: authMagicCookie, data: cookie(4)},
		{family: familyWild, number: "7", name: authMagicCookie, data: cookie(5)},
		{family: familyLocal, address: []byte("vm"), number: "", name: authMagicCookie, data: cookie(6)},
	}
	cases := []struct {
		addr   xauthAddr
		number int
		want   byte // the cookie's fill byte; 0 = none
	}{
		{local, 1, 3}, // skips the other protocol, the other host and the other display
		{local, 2, 2}, // its own number
		{local, 7, 5}, // a wildcard address
		{local, 8, 6}, // an entry for every display of the host
		{xauthAddr{familyInternet, []byte{10, 0, 0, 1}}, 1, 4},
		{xauthAddr{familyInternet, []byte{10, 0, 0, 2}}, 1, 0},
	}
	for _, c := range cases {
		e, ok := findCookie(entries, c.addr, c.number)
		if c.want == 0 {
			if ok {
				t.Errorf("findCookie(%v, %d) = %+v; want none", c.addr, c.number, e)
			}
			continue
		}
		if !ok || !bytes.Equal(e.data, cookie(c.want)) {
			t.Errorf("findCookie(%v, %d) = %+v, %v; want cookie %d", c.addr, c.number, e, ok, c.want)
		}
	}
	// The parser reads what the encoder wrote, and stops at a truncation
	// with the entries before it.
	b := encodeXauth(entries)
	got, err := parseXauthority(b)
	if err != nil || len(got) != len(entries) {
		t.Fatalf("parse of %d entries: %d, %v", len(entries), len(got), err)
	}
	got, err = parseXauthority(b[:len(b)-1])
	if err == nil || len(got) != len(entries)-1 {
		t.Fatalf("parse of a truncated file: %d entries, %v; want %d and an error", len(got), err, len(entries)-1)
	}
}

func FuzzParseXauthority(f *testing.F) {
	f.Add(encodeXauth([]xauthEntry{{family: familyLocal, address: []byte("vm"), number: "0", name: authMagicCookie, data: make([]byte, 16)}}))
	f.Add(encodeXauth([]xauthEntry{{family: familyWild, name: "x"}, {family: familyInternet6, address: make([]byte, 16), number: "12"}}))
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseXauthority(b)
		enc := encodeXauth(entries)
		if !bytes.HasPrefix(b, enc) {
			t.Fatalf("the %d entries parsed do not re-encode to a prefix of the input", len(entries))
		}
		if err == nil && len(enc) != len(b) {
			t.Fatalf("parse without error left %d of %d bytes", len(b)-len(enc), len(b))
		}
		if err != nil && len(enc) == len(b) {
			t.Fatalf("parse error %v on input that re-encodes whole", err)
		}
		findCookie(entries, xauthAddr{family: familyLocal, address: []byte("vm")}, 0)
	})
}

// setupRequest is a connection setup request as xgb v1.1.1 writes it.
func setupRequest(name string, data []byte) []byte {
	b := []byte{'l', 0, 11, 0, 0, 0}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(data)))
	b = append(b, 0, 0)
	b = append(b, name...)
	b = append(b, make([]byte, pad4(len(name))-len(name))...)
	b = append(b, data...)
	return append(b, make([]byte, pad4(len(data))-len(data))...)
}

func TestSetupWithAuth(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 16)
	for _, from := range [][]byte{setupRequest("", nil), setupRequest(authMagicCookie, bytes.Repeat([]byte{1}, 16)), setupRequest("abc", []byte{1, 2, 3})} {
		got, err := setupWithAuth(from, authMagicCookie, data)
		if err != nil || !bytes.Equal(got, setupRequest(authMagicCookie, data)) {
			t.Errorf("setupWithAuth(% x) = % x, %v", from, got, err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("B\x00\x00\x0b\x00\x00\x00\x00\x00\x00\x00\x00"), setupRequest("", nil)[:11], append(setupRequest("ab", nil), 0)} {
		if _, err := setupWithAuth(bad, authMagicCookie, data); err == nil {
			t.Errorf("setupWithAuth(% x) was accepted", bad)
		}
	}
}

func FuzzSetupWithAuth(f *testing.F) {
	f.Add(setupRequest("", nil), authMagicCookie, make([]byte, 16))
	f.Add(setupRequest("ab", []byte{1, 2, 3, 4, 5}), "", []byte(nil))
	f.Add([]byte("l\x00\x0b\x00\x00\x00\xff\xff\x00\x00\x00\x00"), "x", []byte{1})
	f.Fuzz(func(t *testing.T, req []byte, name string, data []byte) {
		out, err := setupWithAuth(req, name, data)
		if err != nil {
			return
		}
		if len(name) > 0xffff || len(data) > 0xffff {
			t.Fatalf("auth of %d+%d bytes accepted", len(name), len(data))
		}
		if !bytes.Equal(out, setupRequest(name, data)) {
			t.Fatalf("setupWithAuth(% x, %q, % x) = % x", req, name, data, out)
		}
	})
}
