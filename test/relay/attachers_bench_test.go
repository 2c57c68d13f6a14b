package relay_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
)

// envRelay makes the test binary a relay process (see TestMain).
const envRelay = "CUA_RELAY_TEST_PROCESS"

// relayProcessConfig is what a relay process of the benchmarks serves.
type relayProcessConfig struct {
	Listen   string `json:"listen"`
	DataDir  string `json:"data_dir"`
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// URLs are the attach URLs handed to Spaces (default: the listener's).
	URLs []string `json:"urls,omitempty"`
	// TURNHost, when set, runs the relay's TURN server there, on
	// TURNPort as UDP and TCP port and the next one for TLS (with the
	// relay's certificate), relaying from TURNRelayIP.
	TURNHost    string `json:"turn_host,omitempty"`
	TURNPort    int    `json:"turn_port,omitempty"`
	TURNRelayIP string `json:"turn_relay_ip,omitempty"`
	// Node names the node (default "bench").
	Node string `json:"node,omitempty"`
	// Cluster, when set, makes the process one node of a cluster.
	Cluster *store.ClusterOptions `json:"cluster,omitempty"`
}

// turn is the TURN server's options of c, nil for none.
func (c relayProcessConfig) turn() *turnsvc.Options {
	if c.TURNHost == "" {
		return nil
	}
	at := func(port int) string { return net.JoinHostPort(c.TURNHost, strconv.Itoa(port)) }
	tlsPort := c.TURNPort + 1
	if c.TURNPort == 0 {
		tlsPort = 0 // each a free port of its own (the credentials name them)
	}
	return &turnsvc.Options{UDPAddr: at(c.TURNPort), TCPAddr: at(c.TURNPort), TLSAddr: at(tlsPort), RelayIP: net.ParseIP(c.TURNRelayIP)}
}

// runRelayProcess is the relay process: a whole relay node (relayd.Start,
// as cua-relay serve runs it) until SIGTERM.
func runRelayProcess(cfg string) int {
	var c relayProcessConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, "relay config:", err)
		return 2
	}
	cert, _, err := relayd.LoadCert(c.CertFile, c.KeyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if c.Node == "" {
		c.Node = "bench"
	}
	r, err := relayd.Start(ctx, ln, relayd.Options{DataDir: c.DataDir, Node: c.Node, TLS: relayd.TLSConfig(cert), Logger: log, Version: "bench",
		URLs: c.URLs, TURN: c.turn(), Cluster: c.Cluster})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	if err := r.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// relayProcess is a relay running in a child process.
type relayProcess struct {
	cmd  *exec.Cmd
	done chan error
}

// startRelayProcess starts a relay process, in ns (nil: the test's own
// network).
func startRelayProcess(b testing.TB, cfg relayProcessConfig, ns *netns) *relayProcess {
	b.Helper()
	return startRelayProcesses(b, []relayProcessConfig{cfg}, ns)[0]
}

// startRelayProcesses starts a relay process for each of cfgs at once
// (the nodes of a cluster come up together: each waits for the others'
// quorum before it is ready), and waits until every one is ready.
func startRelayProcesses(b testing.TB, cfgs []relayProcessConfig, ns *netns) []*relayProcess {
	b.Helper()
	procs := make([]*relayProcess, len(cfgs))
	ready := make([]<-chan bool, len(cfgs))
	for i, cfg := range cfgs {
		procs[i], ready[i] = spawnRelayProcess(b, cfg, ns)
	}
	for i, p := range procs {
		p.waitReady(b, ready[i])
	}
	return procs
}

// spawnRelayProcess starts a relay process without waiting for it: ready
// says whether it started (a cluster's nodes are started together, each
// waiting for a quorum).
func spawnRelayProcess(b testing.TB, cfg relayProcessConfig, ns *netns) (*relayProcess, <-chan bool) {
	b.Helper()
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if ns != nil {
		cmd = ns.command(os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), envRelay+"="+string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &relayProcess{cmd: cmd, done: make(chan error, 1)}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		for sc.Scan() {
		}
		p.done <- cmd.Wait()
	}()
	b.Cleanup(func() { p.stop(b) })
	return p, ready
}

// waitReady waits for a spawned process's ready line.
func (p *relayProcess) waitReady(b testing.TB, ready <-chan bool) {
	b.Helper()
	select {
	case ok := <-ready:
		if !ok {
			b.Fatal("the relay process did not start")
		}
	case <-time.After(waitTimeout):
		_ = p.cmd.Process.Kill()
		b.Fatal("the relay process did not start in time")
	}
}

// kill ends the process with SIGKILL (a crash: no go-away, no stream
// leadership handed over), and waits for it.
func (p *relayProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop ends the relay as SIGTERM does, and waits for it.
func (p *relayProcess) stop(b testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		b.Error("the relay process did not end on SIGTERM")
	}
}

// rss is the process's resident set in bytes, from /proc.
func (p *relayProcess) rss(b testing.TB) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// attachersCount is how many simulated Spaces the benchmark attaches
// (CUA_BENCH_ATTACHERS; the issue's figure is 10,000).
func attachersCount() int {
	if n, err := strconv.Atoi(os.Getenv("CUA_BENCH_ATTACHERS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// BenchmarkRelayIdleAttachers: many simulated Spaces attached and idle
// (their control sessions up, heartbeats answered), the relay in a process
// of its own. It reports the relay's RSS per attached computer and the
// computers one GiB of it holds (target at least 10,000), then restarts
// the relay (SIGTERM: a go-away to every Space, then a new process on the
// same data dir) and reports how long until every one attached again.
func BenchmarkRelayIdleAttachers(b *testing.B) {
	n := attachersCount()
	dir := b.TempDir()
	ca := newWorldCA(b)
	certFile, keyFile := ca.pair(b, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := relayProcessConfig{Listen: addr, DataDir: filepath.Join(dir, "data"), CertFile: certFile, KeyFile: keyFile}
	relay := startRelayProcess(b, cfg, nil)
	ctx := context.Background()
	admin := relayd.NewAdminClient(cfg.DataDir)
	if _, err := admin.CreateUser(ctx, "load", ""); err != nil {
		b.Fatal(err)
	}
	userToken, err := admin.CreateToken(ctx, "load")
	if err != nil {
		b.Fatal(err)
	}
	rc, err := relayapi.New("https://"+addr, userToken, relayapi.Trust{CAFile: ca.file})
	if err != nil {
		b.Fatal(err)
	}
	computers := createSimComputers(b, []*relayapi.Client{rc}, n)
	before := relay.rss(b)
	fleet := startFleet(ca.tls, computers)
	defer fleet.stop()
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := fleet.waitAttaches(wctx, int64(n)); err != nil {
		b.Fatal(err)
	}
	firstAttach := time.Since(start)
	time.Sleep(5 * time.Second) // settled: handshakes done, buffers returned
	after := relay.rss(b)

	relay.stop(b)
	restart := time.Now()
	relay = startRelayProcess(b, cfg, nil)
	if err := fleet.waitAttaches(wctx, int64(2*n)); err != nil {
		b.Fatal(err)
	}
	reattach := time.Since(restart)

	b.ReportMetric(float64(n), "computers")
	b.ReportMetric(float64(after)/(1<<20), "relay-RSS-MiB")
	b.ReportMetric(float64(after-before)/float64(n)/1024, "KiB/computer")
	b.ReportMetric(float64(n)/(float64(after)/(1<<30)), "computers/GiB")
	b.ReportMetric(firstAttach.Seconds(), "s-to-attach-all")
	b.ReportMetric(reattach.Seconds(), "s-to-reattach-all-after-restart")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("attachers one node: %d computers, RSS %.0f MiB, %.1f KiB/computer, %.0f computers/GiB (target >= 10,000); all attached in %.1f s, all back %.1f s after a restart\n",
		n, float64(after)/(1<<20), float64(after-before)/float64(n)/1024, float64(n)/(float64(after)/(1<<30)), firstAttach.Seconds(), reattach.Seconds())
}

// createSimComputers registers n computers (sim-00000, ...), the ith
// through clients[i%len(clients)], as a Space's registration does; each
// is given the URLs that node hands out.
func createSimComputers(b testing.TB, clients []*relayapi.Client, n int) []simComputer {
	b.Helper()
	computers := make([]simComputer, n)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				ct, err := clients[i%len(clients)].CreateComputer(context.Background(), fmt.Sprintf("sim-%05d", i))
				if err != nil {
					errs <- err
					return
				}
				computers[i] = simComputer{token: ct.Token, urls: ct.URLs}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("create computers: %v", err)
	}
	return computers
}

// benchCA is a test CA, its file, and the TLS a simulated Space trusts
// it with.
type benchCA struct {
	ca   *tlstest.CA
	file string
	tls  *tls.Config
}

func newWorldCA(b testing.TB) *benchCA {
	b.Helper()
	ca := tlstest.NewCA(b)
	file := ca.WriteCA(b, b.TempDir())
	pem, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		b.Fatal("no certificate in the test CA's file")
	}
	return &benchCA{ca: ca, file: file, tls: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
}

// pair writes a certificate for 127.0.0.1 and its key into dir.
func (c *benchCA) pair(b testing.TB, dir string) (certFile, keyFile string) {
	b.Helper()
	return tlstest.WritePair(b, dir, c.ca.Issue(b, "127.0.0.1"))
}
