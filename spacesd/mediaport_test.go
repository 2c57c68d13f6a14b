package main

import (
	"context"
	"encoding/json"
	"flag"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

const mediaToken = "media-port-token-4c1d"

// servingDaemon is the serve command run in this process until the test
// ends, with its log.
type servingDaemon struct {
	logs spacesdtest.Logs
	addr string
}

// serveInProcess runs serve with --listen on a free loopback port and
// defaultMediaPort as --media-port's default, and waits for it to listen.
func serveInProcess(t *testing.T, defaultMediaPort int, args ...string) *servingDaemon {
	t.Helper()
	d := &servingDaemon{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out spacesdtest.Logs
	go func() {
		done <- serveWith(ctx, append([]string{"--listen", "127.0.0.1:0", "--token", mediaToken, "--state-dir", t.TempDir()}, args...),
			&out, &d.logs, defaultMediaPort)
	}()
	t.Cleanup(func() { cancel(); <-done })
	desktoptest.Eventually(t, "the daemon listening", func() bool {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve %v ended with %d:\n%s", args, code, d.logs.String())
		default:
		}
		d.addr = d.logged("cua-spacesd serving", "addr")
		return d.addr != ""
	})
	return d
}

// logged is the string field key of the first log line with message msg.
func (d *servingDaemon) logged(msg, key string) string {
	for _, line := range strings.Split(d.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			s, _ := rec[key].(string)
			return s
		}
	}
	return ""
}

func (d *servingDaemon) capabilities(t *testing.T) *api.Capabilities {
	t.Helper()
	c, err := client.New("http://"+d.addr, mediaToken)
	if err != nil {
		t.Fatal(err)
	}
	caps, err := c.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return caps
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		t.Fatalf("no port in %q", addr)
	}
	return n
}

// Two daemons on one machine both stream. The first holds the media port
// P; a second whose default media port is P (as 3211 is every daemon's)
// takes its --listen port's number instead, or a free port when that one
// is taken too, says so in its log, and serves both streams. A daemon told
// --media-port P is not moved: its streams are unsupported, the limitation
// naming the flag that picks another.
func TestTwoDaemonsStream(t *testing.T) {
	vp8test.Require(t)
	t.Setenv(tokenEnv, "")
	display := desktoptest.Start(t, desktoptest.Options{})
	streams := []api.Feature{api.FeatureDesktopStream, api.FeatureWindowStream}

	first := serveInProcess(t, streamsvc.DefaultMediaPort, "--display", display, "--media-port", "0")
	held := first.logged("media listening", "udp")
	if held == "" {
		t.Fatalf("the first daemon's media does not listen:\n%s", first.logs.String())
	}
	p := portOf(t, held)

	second := serveInProcess(t, p, "--display", display)
	listenPort := portOf(t, second.addr)
	media := second.logged("media listening", "udp")
	if media == "" {
		t.Fatalf("the second daemon's media does not listen:\n%s", second.logs.String())
	}
	if got := portOf(t, media); got != listenPort {
		// Only when the listen port's number was someone's already.
		if c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: listenPort}); err == nil {
			c.Close()
			t.Fatalf("media on %d, though UDP %d (the listen port) is free", got, listenPort)
		}
	}
	if taken := second.logged("the default media UDP port is taken (another daemon on this machine?): the media uses another port; give --media-port to choose it", "taken"); taken != held {
		t.Errorf("the log does not say why the media moved (taken %q, want %q):\n%s", taken, held, second.logs.String())
	}
	caps := second.capabilities(t)
	for _, f := range streams {
		if ok, why := caps.Supports(f); !ok {
			t.Errorf("second daemon: %s unsupported: %s", f, why)
		}
	}

	asked := serveInProcess(t, streamsvc.DefaultMediaPort, "--display", display, "--media-port", strconv.Itoa(p))
	caps = asked.capabilities(t)
	for _, f := range streams {
		ok, why := caps.Supports(f)
		if ok || !strings.Contains(why, "--media-port") || !strings.Contains(why, held) {
			t.Errorf("--media-port %d, taken: %s supported %v, %q; want unsupported naming %s and --media-port", p, f, ok, why, held)
		}
	}
}

// The media's fallbacks: only for the default port, the listen port's
// number first when it differs, then any free port.
func TestMediaOptions(t *testing.T) {
	tests := []struct {
		args       []string
		listen     string
		listenPort int
		udp        string
		fallbacks  []string
	}{
		{nil, "127.0.0.1:4000", 4000, "127.0.0.1:3211", []string{"127.0.0.1:4000", "127.0.0.1:0"}},
		{nil, "0.0.0.0:3211", 3211, "0.0.0.0:3211", []string{"0.0.0.0:0"}},
		{nil, "127.0.0.1:0", 41234, "127.0.0.1:3211", []string{"127.0.0.1:41234", "127.0.0.1:0"}},
		{[]string{"--media-port", "3211"}, "127.0.0.1:4000", 4000, "127.0.0.1:3211", nil},
		{[]string{"--media-port", "5000"}, "127.0.0.1:4000", 4000, "127.0.0.1:5000", nil},
		{[]string{"--media-port", "0"}, "127.0.0.1:4000", 4000, "127.0.0.1:0", nil},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		m := mediaFlags(fs, streamsvc.DefaultMediaPort)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		o := m.options(tt.listen, tt.listenPort)
		if o.UDPAddr != tt.udp || !slices.Equal(o.UDPFallbacks, tt.fallbacks) {
			t.Errorf("%v on %s (port %d): udp %s, fallbacks %v; want %s, %v", tt.args, tt.listen, tt.listenPort, o.UDPAddr, o.UDPFallbacks, tt.udp, tt.fallbacks)
		}
	}
}
