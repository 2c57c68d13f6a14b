package relay_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// benchPair is one Space serving TLS on loopback and attached to a relay
// that runs in a process of its own (as it would on its own machine: the
// relay's goroutines do not share the test process's processors with the
// Space's and the client's), and two clients of the Space: direct (TLS,
// trusted by the test CA) and through the relay (the bridge's client of
// relay:box).
type benchPair struct {
	s              *space
	direct, relayd *client.Client
}

func newBenchPair(b *testing.B) *benchPair {
	b.Helper()
	ca := newWorldCA(b)
	dir := b.TempDir()
	certFile, keyFile := ca.pair(b, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := relayProcessConfig{Listen: addr, DataDir: filepath.Join(dir, "data"), CertFile: certFile, KeyFile: keyFile}
	startRelayProcess(b, cfg, nil)
	admin := relayd.NewAdminClient(cfg.DataDir)
	ctx := context.Background()
	if _, err := admin.CreateUser(ctx, "alice", ""); err != nil {
		b.Fatal(err)
	}
	userToken, err := admin.CreateToken(ctx, "alice")
	if err != nil {
		b.Fatal(err)
	}
	alice := newBridgeAt(b, "https://"+addr, ca.file, userToken)

	state := b.TempDir()
	cert := ca.ca.Issue(b, "127.0.0.1")
	o := spacesdtest.Options{
		Files:     filesvc.Options{StateDir: state},
		Relay:     relaysvc.Options{StateDir: state},
		TLS:       server.NewTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }),
		ClientTLS: client.TLS{CAFile: ca.file},
	}
	s := &space{d: spacesdtest.Start(b, o), stateDir: state, opts: o}
	if _, err := alice.reg.AddEntry(ctx, registryEntry("box", s.d.URL, s.d.Token, ca.file)); err != nil {
		b.Fatal(err)
	}
	if r := alice.register(b, "box"); !r.Online {
		b.Fatalf("register: %+v", r)
	}
	s.waitConnected(b, 0)
	rc, _, err := alice.reg.Client("relay:box")
	if err != nil {
		b.Fatal(err)
	}
	return &benchPair{s: s, direct: s.d.Client, relayd: rc}
}

// paths is each way a benchmark measures, in the order it reports them.
func (p *benchPair) paths() []struct {
	name string
	c    *client.Client
} {
	return []struct {
		name string
		c    *client.Client
	}{{"direct-tls", p.direct}, {"relay", p.relayd}}
}

// reportLatency reports the median and p99 of ds in milliseconds.
func reportLatency(b *testing.B, ds []time.Duration) {
	b.Helper()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(ms(spacesdtest.Percentile(ds, 50)), "p50-ms")
	b.ReportMetric(ms(spacesdtest.Percentile(ds, 99)), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkRelayExecTrue: exec true, direct to the Space over TLS and
// through the relay (target: the relay adds at most 1 ms at p50).
func BenchmarkRelayExecTrue(b *testing.B) {
	p := newBenchPair(b)
	for _, path := range p.paths() {
		b.Run(path.name, func(b *testing.B) {
			ctx := context.Background()
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				res, err := path.c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"true"}}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec: %+v, %v", res, err)
				}
				ds = append(ds, time.Since(start))
			}
			reportLatency(b, ds)
		})
	}
}

// ptyEcho is a PTY session (cat on a terminal) whose echo round trip a
// benchmark measures: a byte in, the terminal's echo of it out.
type ptyEcho struct {
	st *client.ProcessStream
	c  *client.Client
	id string
}

func startPTYEcho(b *testing.B, c *client.Client) *ptyEcho {
	b.Helper()
	ctx := context.Background()
	p, err := c.Start(ctx, api.StartRequest{Command: api.Command{Argv: []string{"cat"}}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		b.Fatal(err)
	}
	st, err := c.StreamProcess(ctx, p.ID, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	e := &ptyEcho{st: st, c: c, id: p.ID}
	b.Cleanup(func() { st.Close(); _ = c.Signal(context.Background(), p.ID, "KILL") })
	return e
}

// roundTrip sends one letter and waits for its echo.
func (e *ptyEcho) roundTrip(b *testing.B) time.Duration {
	start := time.Now()
	if err := e.st.Send(api.StreamInput{Type: "stdin", Data: []byte("x")}); err != nil {
		b.Fatal(err)
	}
	for {
		ev, err := e.st.Next()
		if err != nil {
			b.Fatal(err)
		}
		if ev.Type == "output" && strings.Contains(string(ev.Data), "x") {
			return time.Since(start)
		}
	}
}

// BenchmarkRelayPTYEcho: a keystroke's echo round trip on a PTY session,
// direct over TLS and through the relay.
func BenchmarkRelayPTYEcho(b *testing.B) {
	p := newBenchPair(b)
	for _, path := range p.paths() {
		b.Run(path.name, func(b *testing.B) {
			e := startPTYEcho(b, path.c)
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				ds = append(ds, e.roundTrip(b))
			}
			reportLatency(b, ds)
		})
	}
}

// BenchmarkRelayPTYEchoDuringDownload: the same echo through the relay,
// idle and while a 256 MiB download runs through the relay on the side
// (target: p99 at most 20 ms during it). The download takes its own data
// connection; the keystrokes stay on the control session.
func BenchmarkRelayPTYEchoDuringDownload(b *testing.B) {
	p := newBenchPair(b)
	big := filepath.Join(p.s.stateDir, "big.bin")
	writeRandom(b, big, 256<<20)
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "during-256MiB-download"
		}
		b.Run(name, func(b *testing.B) {
			e := startPTYEcho(b, p.relayd)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			if busy {
				wg.Go(func() {
					for ctx.Err() == nil {
						if err := download(ctx, p.relayd, big); err != nil && ctx.Err() == nil {
							b.Error(err)
							return
						}
					}
				})
				time.Sleep(200 * time.Millisecond) // the download under way
			}
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				ds = append(ds, e.roundTrip(b))
				time.Sleep(5 * time.Millisecond) // a typist's pace, not a flood
			}
			cancel()
			wg.Wait()
			reportLatency(b, ds)
		})
	}
}

// download reads the whole file and throws it away.
func download(ctx context.Context, c *client.Client, path string) error {
	body, _, err := c.Read(ctx, path, 0, -1)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(io.Discard, body)
	return err
}

// BenchmarkRelayDownload256MiB: a 256 MiB download, direct from the Space
// serving TLS and through the relay (target: through the relay at least
// 40 % of direct).
func BenchmarkRelayDownload256MiB(b *testing.B) {
	p := newBenchPair(b)
	big := filepath.Join(p.s.stateDir, "big.bin")
	writeRandom(b, big, 256<<20)
	for _, path := range p.paths() {
		b.Run(path.name, func(b *testing.B) {
			b.SetBytes(256 << 20)
			for b.Loop() {
				if err := download(context.Background(), path.c, big); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
