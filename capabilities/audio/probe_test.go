package audio_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
)

// silentServer is a socket that takes connections and never answers: a
// sound server that hangs.
func silentServer(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "silent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "native"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return "unix:" + ln.Addr().String()
}

// TestProbe: Probe answers nil for a server with a default sink, and for
// everything else capability_missing with one sentence that says what is
// missing, within ProbeTimeout.
func TestProbe(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	noSink := audiotest.StartPulseWith(t, audiotest.Options{NoSink: true})
	for _, tc := range []struct {
		name string
		opts audio.Options
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		kind api.Kind // "" = supported
		says string
	}{
		{name: "running", opts: audio.Options{Server: srv.Addr}},
		{name: "named source", opts: audio.Options{Server: srv.Addr, Source: audiotest.SinkName + ".monitor"}},
		{name: "no server", opts: audio.Options{Server: "unix:" + filepath.Join(t.TempDir(), "native")},
			kind: api.KindCapabilityMissing, says: "no sound server at unix:/"},
		{name: "no server at any address", opts: audio.Options{Server: "unix:/nonexistent/a unix:/nonexistent/b"},
			kind: api.KindCapabilityMissing, says: "no sound server at unix:/nonexistent/a or unix:/nonexistent/b: start PulseAudio or PipeWire's pipewire-pulse"},
		{name: "no sink", opts: audio.Options{Server: noSink.Addr},
			kind: api.KindCapabilityMissing, says: "has no output (no default sink)"},
		{name: "no such source", opts: audio.Options{Server: srv.Addr, Source: "nope"},
			kind: api.KindCapabilityMissing, says: `has no source "nope"`},
		{name: "silent server", opts: audio.Options{Server: silentServer(t)},
			kind: api.KindCapabilityMissing, says: "did not answer within 2s"},
		{name: "bad address", opts: audio.Options{Server: "unix:relative/path"},
			kind: api.KindCapabilityMissing, says: "not valid"},
		{name: "caller cancelled", opts: audio.Options{Server: silentServer(t)},
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 100*time.Millisecond)
			},
			kind: api.KindTimeout, says: "did not answer before the caller's deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := t.Context(), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx(ctx)
			}
			defer cancel()
			start := time.Now()
			err := audio.Probe(ctx, tc.opts)
			if el := time.Since(start); el > audio.ProbeTimeout+time.Second {
				t.Errorf("Probe took %v", el)
			}
			if api.KindOf(err) != tc.kind {
				t.Fatalf("Probe: %v (kind %q), want kind %q", err, api.KindOf(err), tc.kind)
			}
			if err == nil {
				return
			}
			msg := api.AsError(err).Message
			if !strings.Contains(msg, tc.says) {
				t.Errorf("message %q, want it to say %q", msg, tc.says)
			}
			// One sentence: no full stop inside, nor a second line.
			if strings.Contains(msg, "\n") || strings.Contains(strings.TrimSuffix(msg, "."), ". ") {
				t.Errorf("message %q is not one sentence", msg)
			}
			t.Logf("%s", msg)
		})
	}
}

// TestProbeEnvironment: with no address given, Probe finds the server
// where libpulse would, here through PULSE_SERVER.
func TestProbeEnvironment(t *testing.T) {
	srv := audiotest.StartPulse(t)
	t.Setenv("PULSE_SERVER", srv.Addr)
	if err := audio.Probe(t.Context(), audio.Options{}); err != nil {
		t.Errorf("Probe with PULSE_SERVER=%s: %v", srv.Addr, err)
	}
	t.Setenv("PULSE_SERVER", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if err := audio.Probe(t.Context(), audio.Options{}); api.KindOf(err) != api.KindCapabilityMissing {
		t.Errorf("Probe with no server: %v", err)
	}
}

// TestOpenErrors: Open fails with the kind of what is wrong.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	srv := audiotest.StartPulse(t)
	for _, tc := range []struct {
		name string
		opts audio.Options
		kind api.Kind
	}{
		{"no server", audio.Options{Server: "unix:" + filepath.Join(t.TempDir(), "native")}, api.KindCapabilityMissing},
		{"no such source", audio.Options{Server: srv.Addr, Source: "nope"}, api.KindNotFound},
		{"NUL in the source", audio.Options{Server: srv.Addr, Source: "a\x00b"}, api.KindInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := audio.Open(t.Context(), tc.opts)
			if err == nil {
				c.Close()
				t.Fatal("Open succeeded")
			}
			if api.KindOf(err) != tc.kind {
				t.Errorf("Open: %v (kind %s), want kind %s", err, api.KindOf(err), tc.kind)
			}
		})
	}
}
