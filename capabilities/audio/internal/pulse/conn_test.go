package pulse

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTimeout bounds each wait on the real server.
const testTimeout = 10 * time.Second

// dial connects to srv as a client of this package would.
func dial(t *testing.T, srv *audiotest.Server, cookie []byte) *Conn {
	t.Helper()
	addrs, err := Environment{}.ParseServer(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c, err := Dial(ctx, addrs[0], Config{Cookie: cookie, Props: []Prop{StringProp("application.name", "pulse test")}})
	if err != nil {
		t.Fatalf("dial %s: %v\n%s", srv.Addr, err, srv.Log())
	}
	t.Cleanup(c.Close)
	return c
}

// stereo48k is the capture's format.
var stereo48k = SampleSpec{Format: FormatS16LE, Channels: 2, Rate: 48000}

// recorder collects what a record stream hands over.
type recorder struct {
	mu     sync.Mutex
	blocks []int
	bytes  int
	got    chan struct{} // one signal per block, dropped when full
	events chan StreamEvent
	ended  chan error
}

func newRecorder() *recorder {
	return &recorder{got: make(chan struct{}, 1), events: make(chan StreamEvent, 16), ended: make(chan error, 1)}
}

func (r *recorder) options(source string) RecordOptions {
	return RecordOptions{
		Source: source, Spec: stereo48k, ChannelMap: []uint8{ChannelFrontLeft, ChannelFrontRight},
		MaxLength: 38400, FragSize: 1920, AdjustLatency: true,
		Props: []Prop{StringProp("media.name", "pulse test")},
		Data: func(p []byte) {
			r.mu.Lock()
			r.blocks = append(r.blocks, len(p))
			r.bytes += len(p)
			r.mu.Unlock()
			select {
			case r.got <- struct{}{}:
			default:
			}
		},
		Event: func(ev StreamEvent) { r.events <- ev },
		End:   func(err error) { r.ended <- err },
	}
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// waitBytes waits until n bytes have arrived.
func (r *recorder) waitBytes(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(testTimeout)
	for r.total() < n {
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("%d bytes of audio within %v, want %d", r.total(), testTimeout, n)
		}
	}
}

func waitEnd(t *testing.T, r *recorder) error {
	t.Helper()
	select {
	case err := <-r.ended:
		return err
	case <-time.After(testTimeout):
		t.Fatal("the stream did not end")
		return nil
	}
}

// TestServerInfo: the handshake (AUTH, SET_CLIENT_NAME) and
// GET_SERVER_INFO against the real server, with and without its cookie.
func TestServerInfo(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	cookie, err := os.ReadFile(srv.Cookie)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cookie []byte
	}{
		{"cookie", cookie},
		// The server lets its own user in without one (by the peer's
		// credentials on the socket).
		{"no cookie", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, srv, tc.cookie)
			if v := c.ProtocolVersion(); v != Version {
				t.Errorf("protocol version %d, want %d", v, Version)
			}
			info, err := c.ServerInfo(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if info.PackageName != "pulseaudio" || info.DefaultSink != audiotest.SinkName || info.DefaultSource != audiotest.SinkName+".monitor" {
				t.Errorf("server info %+v", info)
			}
			if info.Spec.Channels == 0 || info.Spec.Rate == 0 || len(info.ChannelMap) != int(info.Spec.Channels) {
				t.Errorf("default spec %+v, channel map %v", info.Spec, info.ChannelMap)
			}
		})
	}
}

// TestNoDefaultSink: a server without sinks answers no default sink.
func TestNoDefaultSink(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulseWith(t, audiotest.Options{NoSink: true})
	info, err := dial(t, srv, nil).ServerInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.DefaultSink != "" {
		t.Errorf("default sink %q on a server without sinks", info.DefaultSink)
	}
}

// TestRecordMonitor records the sink's monitor in the asked format, in
// blocks of whole frames, and reads the stream's latency.
func TestRecordMonitor(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := dial(t, srv, nil)
	r := newRecorder()
	s, err := c.CreateRecordStream(t.Context(), r.options(srv.Sink+".monitor"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec != stereo48k || len(s.ChannelMap) != 2 || s.Source != srv.Sink+".monitor" || s.Suspended {
		t.Errorf("stream %+v", s)
	}
	if s.FragSize == 0 || s.FragSize > 4*1920 || s.MaxLength < s.FragSize {
		t.Errorf("granted fragsize %d, maxlength %d (asked 1920, 38400)", s.FragSize, s.MaxLength)
	}
	t.Logf("granted fragsize %d bytes, maxlength %d, source latency %v", s.FragSize, s.MaxLength, s.SourceLatency)

	// An idle null sink renders in blocks of up to 2 s: its first block
	// for us may take that long. Then the monitor flows in real time, as
	// silence.
	r.waitBytes(t, 1)
	start, from := time.Now(), r.total()
	r.waitBytes(t, from+48000*4/2)
	if el := time.Since(start); el > time.Second {
		t.Errorf("half a second of audio took %v", el)
	}
	r.mu.Lock()
	for _, n := range r.blocks {
		if n%4 != 0 {
			t.Errorf("a block of %d bytes: not whole stereo frames", n)
		}
	}
	r.mu.Unlock()

	l, err := s.Latency(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !l.Running || l.WriteIndex < l.ReadIndex || l.ReadIndex <= 0 || l.Source > time.Second || l.Monitor > time.Second {
		t.Errorf("latency %+v", l)
	}
	if d := l.Local.Sub(time.Now()); d > time.Second || d < -testTimeout {
		t.Errorf("latency's local time %v is not the time we asked", l.Local)
	}
	t.Logf("latency: monitor %v, source %v", l.Monitor, l.Source)
}

// TestServerErrors: the server's ERROR answers arrive as ServerError with
// their code, and leave the connection usable.
func TestServerErrors(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := dial(t, srv, nil)
	if _, err := c.LookupSource(t.Context(), "no-such-source"); !errors.Is(err, CodeNoEntity) {
		t.Errorf("lookup of a missing source: %v, want %v", err, CodeNoEntity)
	}
	r := newRecorder()
	_, err := c.CreateRecordStream(t.Context(), r.options("no-such-source"))
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeNoEntity || se.Command != cmdCreateRecordStream {
		t.Errorf("record from a missing source: %v", err)
	}
	if idx, err := c.LookupSource(t.Context(), srv.Sink+".monitor"); err != nil || idx == noIndex {
		t.Errorf("lookup of the monitor after errors: %d, %v", idx, err)
	}
}

// TestStreamEvents: a suspended sink's monitor stream hears of it, and a
// stream the server kills ends with ErrStreamKilled while the connection
// lives on.
func TestStreamEvents(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := dial(t, srv, nil)
	r := newRecorder()
	if _, err := c.CreateRecordStream(t.Context(), r.options(srv.Sink+".monitor")); err != nil {
		t.Fatal(err)
	}
	r.waitBytes(t, 1920)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	for _, suspend := range []bool{true, false} {
		if err := srv.Suspend(ctx, suspend); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-r.events:
			if ev.Suspended != suspend || ev.Moved {
				t.Errorf("event %+v after suspend=%v", ev, suspend)
			}
		case <-ctx.Done():
			t.Fatalf("no event after suspend=%v", suspend)
		}
	}
	// Without its sink the monitor goes, and with no other source to
	// move the stream to, the server kills it.
	if _, err := srv.Pactl(ctx, "unload-module", "module-null-sink"); err != nil {
		t.Fatal(err)
	}
	if err := waitEnd(t, r); !errors.Is(err, ErrStreamKilled) {
		t.Errorf("end of a killed stream: %v", err)
	}
	if _, err := c.ServerInfo(ctx); err != nil {
		t.Errorf("the connection after its stream was killed: %v", err)
	}
}

// TestConnEnds: Close ends the streams with ErrClosed; a server that dies
// ends them with the connection's error, and every later request fails
// at once.
func TestConnEnds(t *testing.T) {
	t.Parallel()
	t.Run("close", func(t *testing.T) {
		srv := audiotest.StartPulse(t)
		c := dial(t, srv, nil)
		r := newRecorder()
		if _, err := c.CreateRecordStream(t.Context(), r.options(srv.Sink+".monitor")); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if err := waitEnd(t, r); !errors.Is(err, ErrClosed) {
			t.Errorf("end after Close: %v", err)
		}
		if _, err := c.ServerInfo(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("request after Close: %v", err)
		}
	})
	t.Run("server killed", func(t *testing.T) {
		srv := audiotest.StartPulse(t)
		c := dial(t, srv, nil)
		r := newRecorder()
		if _, err := c.CreateRecordStream(t.Context(), r.options(srv.Sink+".monitor")); err != nil {
			t.Fatal(err)
		}
		r.waitBytes(t, 1920)
		start := time.Now()
		srv.Kill()
		err := waitEnd(t, r)
		if err == nil || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "closed the connection") {
			t.Errorf("end after the server died: %v", err)
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("the stream ended %v after the server died", el)
		}
		<-c.Done()
		if _, err := c.ServerInfo(t.Context()); err == nil || !errors.Is(err, c.Err()) {
			t.Errorf("request after the server died: %v (connection: %v)", err, c.Err())
		}
	})
}

// TestRequestContext: a request whose context has ended fails at once and
// leaves the connection usable.
func TestRequestContext(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	c := dial(t, srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.ServerInfo(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("request with an ended context: %v", err)
	}
	if _, err := c.ServerInfo(t.Context()); err != nil {
		t.Errorf("the next request: %v", err)
	}
}

// TestDialErrors: what Dial refuses before it connects, and a socket that
// is not there.
func TestDialErrors(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		addr Address
		cfg  Config
		want string
	}{
		{"no socket", Address{"unix", t.TempDir() + "/native"}, Config{}, "no such file"},
		{"short cookie", Address{"unix", "/nonexistent"}, Config{Cookie: make([]byte, 10)}, "cookie of 10 bytes"},
		{"NUL in a key", Address{"unix", "/nonexistent"}, Config{Props: []Prop{StringProp("a\x00b", "")}}, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(ctx, tc.addr, tc.cfg)
			if err == nil {
				c.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}
