package pulse

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envOf(vars map[string]string, uid int) Environment {
	return Environment{Getenv: func(k string) string { return vars[k] }, UID: uid, Hostname: "vm", MachineID: "abc123"}
}

func TestAddresses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server string
		env    map[string]string
		want   []string
	}{
		{"the usual places", "", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, []string{"unix:/run/user/1000/pulse/native", "unix:/var/run/pulse/native"}},
		{"a runtime dir elsewhere", "", map[string]string{"XDG_RUNTIME_DIR": "/tmp/rt"}, []string{"unix:/tmp/rt/pulse/native", "unix:/run/user/1000/pulse/native", "unix:/var/run/pulse/native"}},
		{"no runtime dir", "", nil, []string{"unix:/run/user/1000/pulse/native", "unix:/var/run/pulse/native"}},
		{"a relative runtime dir is ignored", "", map[string]string{"XDG_RUNTIME_DIR": "rt"}, []string{"unix:/run/user/1000/pulse/native", "unix:/var/run/pulse/native"}},
		{"PULSE_SERVER", "", map[string]string{"PULSE_SERVER": "unix:/x/native", "XDG_RUNTIME_DIR": "/tmp/rt"}, []string{"unix:/x/native"}},
		{"the option wins", "/y/native", map[string]string{"PULSE_SERVER": "unix:/x/native"}, []string{"unix:/y/native"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs, err := envOf(tc.env, 1000).Addresses(tc.server)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range addrs {
				got = append(got, a.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseServer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // nil: an error
	}{
		{"unix:/run/pulse/native", []string{"unix:/run/pulse/native"}},
		{"/run/pulse/native", []string{"unix:/run/pulse/native"}},
		{"tcp:host", []string{"tcp:host:4713"}},
		{"tcp:host:1234", []string{"tcp:host:1234"}},
		{"host:99", []string{"tcp:host:99"}},
		{"tcp4:127.0.0.1", []string{"tcp4:127.0.0.1:4713"}},
		{"tcp6:[::1]:5000", []string{"tcp6:[::1]:5000"}},
		{"tcp6:[::1]", []string{"tcp6:[::1]:4713"}},
		{"tcp6:::1", []string{"tcp6:[::1]:4713"}},
		{"{vm}unix:/a {other}unix:/b {abc123}tcp:h", []string{"unix:/a", "tcp:h:4713"}},
		{"  unix:/a\t/b  ", []string{"unix:/a", "unix:/b"}},
		{"{other}unix:/b", nil},
		{"unix:relative", nil},
		{"{vm", nil},
		{"tcp:", nil},
		{"tcp:host:0", nil},
		{"tcp:host:x", nil},
		{"tcp:a/b", nil},
		{strings.Repeat("/a ", maxServerEntries+1), nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			addrs, err := envOf(nil, 0).ParseServer(tc.in)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("%v, want an error", addrs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range addrs {
				got = append(got, a.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

func TestCookie(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte(len(name))}, n), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	explicit := write("explicit", CookieSize)
	short := write("short", 10)
	config := write("home/.config/pulse/cookie", CookieSize)
	xdg := write("xdg/pulse/cookie", CookieSize)
	legacy := write("legacy/.pulse-cookie", CookieSize)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // the file read; "" = none
	}{
		{"PULSE_COOKIE", map[string]string{"PULSE_COOKIE": explicit, "HOME": filepath.Join(dir, "home")}, explicit},
		{"a short file is no cookie", map[string]string{"PULSE_COOKIE": short, "HOME": filepath.Join(dir, "home")}, config},
		{"~/.config", map[string]string{"HOME": filepath.Join(dir, "home")}, config},
		{"XDG_CONFIG_HOME", map[string]string{"HOME": filepath.Join(dir, "home"), "XDG_CONFIG_HOME": filepath.Join(dir, "xdg")}, xdg},
		{"~/.pulse-cookie", map[string]string{"HOME": filepath.Join(dir, "legacy")}, legacy},
		{"none", map[string]string{"HOME": filepath.Join(dir, "nowhere")}, ""},
		{"no HOME", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cookie, path := envOf(tc.env, 0).Cookie()
			if path != tc.want {
				t.Fatalf("read %q, want %q", path, tc.want)
			}
			if tc.want != "" && len(cookie) != CookieSize {
				t.Errorf("a cookie of %d bytes", len(cookie))
			}
			if tc.want == "" && cookie != nil {
				t.Errorf("a cookie from nowhere")
			}
		})
	}
}

// TestTagstruct: each value reads back as written, and a reader refuses
// a value of another type or one cut short.
func TestTagstruct(t *testing.T) {
	var w tagWriter
	w.u32(0xdeadbeef)
	w.u8(7)
	w.u64(1 << 40)
	w.s64(-5)
	w.usec(1500 * time.Microsecond)
	w.str("héllo")
	w.nullStr()
	w.boolean(true)
	w.boolean(false)
	w.arbitrary([]byte{1, 2, 3})
	w.sampleSpec(SampleSpec{FormatS16LE, 2, 48000})
	w.channelMap([]uint8{ChannelFrontLeft, ChannelFrontRight})
	w.cvolume([]uint32{VolumeNorm, 0})
	w.timeval(time.Unix(1000, 250_000_000))
	w.proplist([]Prop{StringProp("media.name", "x"), {Key: "raw", Value: []byte{0, 1}}})

	r := tagReader{b: w.b}
	got := []any{r.u32(), r.u8(), r.u64(), r.s64(), r.usec(), r.string()}
	s, null := r.str()
	got = append(got, s, null, r.boolean(), r.boolean(), r.arbitrary(), r.sampleSpec(), r.channelMap(), r.cvolume(), r.timeval(), r.proplist())
	want := []any{uint32(0xdeadbeef), uint8(7), uint64(1 << 40), int64(-5), 1500 * time.Microsecond, "héllo", "", true, true, false,
		[]byte{1, 2, 3}, SampleSpec{FormatS16LE, 2, 48000}, []uint8{1, 2}, []uint32{VolumeNorm, 0}, time.Unix(1000, 250_000_000),
		[]Prop{{Key: "media.name", Value: []byte("x\x00")}, {Key: "raw", Value: []byte{0, 1}}}}
	if err := r.done("values"); err != nil || len(r.b) != 0 {
		t.Fatalf("%v, %d bytes left", err, len(r.b))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("value %d: %#v, want %#v", i, got[i], want[i])
		}
	}

	for _, tc := range []struct {
		name string
		b    []byte
		read func(*tagReader)
	}{
		{"wrong tag", []byte{tagU8, 1}, func(r *tagReader) { r.u32() }},
		{"short u32", []byte{tagU32, 0, 0}, func(r *tagReader) { r.u32() }},
		{"unterminated string", []byte{tagString, 'a'}, func(r *tagReader) { r.string() }},
		{"arbitrary past the end", []byte{tagArbitrary, 0, 0, 0, 9, 1}, func(r *tagReader) { r.arbitrary() }},
		{"huge arbitrary", []byte{tagArbitrary, 0xff, 0xff, 0xff, 0xff}, func(r *tagReader) { r.arbitrary() }},
		{"channel map over 32", append([]byte{tagChannelMap, 33}, make([]byte, 33)...), func(r *tagReader) { r.channelMap() }},
		{"property length mismatch", []byte{tagPropList, tagString, 'k', 0, tagU32, 0, 0, 0, 2, tagArbitrary, 0, 0, 0, 1, 'v', tagStringNull}, func(r *tagReader) { r.proplist() }},
		{"unknown tag", []byte{'?'}, func(r *tagReader) { r.skip() }},
		{"empty", nil, func(r *tagReader) { r.boolean() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tagReader{b: tc.b}
			tc.read(&r)
			if r.err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestReadPacketLimits: a packet over maxPayload is refused before its
// payload is allocated; one cut short is an unexpected EOF.
func TestReadPacketLimits(t *testing.T) {
	d := make([]byte, descriptorSize)
	binary.BigEndian.PutUint32(d, maxPayload+1)
	if _, _, err := readPacket(bytes.NewReader(d), nil); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("oversized packet: %v", err)
	}
	binary.BigEndian.PutUint32(d, 10)
	if _, _, err := readPacket(bytes.NewReader(append(d, 1, 2)), nil); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("short packet: %v", err)
	}
}
