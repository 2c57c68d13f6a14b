package relay_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// attacherCluster is three relay nodes, each a process of its own
// (relayd.Start, as cua-relay serve --cluster runs it), on one NATS
// cluster on loopback: routes authenticated by a mesh key, each node its
// own data dir, HTTPS and route ports. Each node hands Spaces every node's
// URL, its own first, so Spaces registered through different nodes start
// at different ones.
type attacherCluster struct {
	names []string
	cfgs  []relayProcessConfig
	procs []*relayProcess
	urls  []string // attach URLs, node i's at i
	ca    *benchCA
}

func startAttacherCluster(tb testing.TB) *attacherCluster {
	tb.Helper()
	c := &attacherCluster{names: []string{"a", "b", "c"}, ca: newWorldCA(tb)}
	dir := tb.TempDir()
	certFile, keyFile := c.ca.pair(tb, dir)
	key := []byte(store.GenerateKey())
	free := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	var addrs, routes []string
	for range c.names {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", free()))
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", free()))
		c.urls = append(c.urls, "wss://"+addrs[len(addrs)-1])
	}
	for i, name := range c.names {
		var others []string
		for j := range c.names {
			if j != i {
				others = append(others, "nats://"+routes[j])
			}
		}
		c.cfgs = append(c.cfgs, relayProcessConfig{Listen: addrs[i], DataDir: filepath.Join(dir, name), CertFile: certFile, KeyFile: keyFile,
			URLs: append(slices.Clone(c.urls[i:]), c.urls[:i]...), Node: name,
			Cluster: &store.ClusterOptions{Name: "relays", Listen: routes[i], Routes: others, Key: key}})
	}
	c.procs = startRelayProcesses(tb, c.cfgs, nil)
	return c
}

// admin is node i's admin client.
func (c *attacherCluster) admin(i int) *relayd.AdminClient {
	return relayd.NewAdminClient(c.cfgs[i].DataDir)
}

// clients are a new user's API clients, one per node.
func (c *attacherCluster) clients(tb testing.TB, user string) []*relayapi.Client {
	tb.Helper()
	ctx := context.Background()
	if _, err := c.admin(0).CreateUser(ctx, user, ""); err != nil {
		tb.Fatal(err)
	}
	tok, err := c.admin(0).CreateToken(ctx, user)
	if err != nil {
		tb.Fatal(err)
	}
	var out []*relayapi.Client
	for _, cfg := range c.cfgs {
		rc, err := relayapi.New("https://"+cfg.Listen, tok, relayapi.Trust{CAFile: c.ca.file})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, rc)
	}
	return out
}

// clusterAttachers is what one run of the scenario measured.
type clusterAttachers struct {
	n                       int
	rssBefore, rss          []int64 // each node's, before the attaches and once all were attached
	attached                []int64 // sessions on each node once all were attached
	firstAttach             time.Duration
	killed                  int           // the node killed
	ledByKilled             []string      // the store's streams it led when killed: an attach that reads or writes one waits for its new leader
	landAgain               time.Duration // from its kill to all of its computers attached again elsewhere
	rssAfter, attachedAfter []int64       // the survivors' (the killed node's: 0) once they had landed
}

// runClusterAttachers: n simulated Spaces registered through the three
// nodes in turn, attached (each starting at the node it registered
// through), settled for settle; then node b is killed, and the run waits
// until every Space is attached again, to a or c, and the survivors'
// session counts agree.
func runClusterAttachers(tb testing.TB, n int, settle time.Duration) clusterAttachers {
	tb.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Max < uint64(n)+1024 {
		// Go raises the soft limit to the hard one in every process (the
		// relays too); the test process holds a socket per Space.
		tb.Fatalf("RLIMIT_NOFILE hard limit %d: too low for %d Spaces in one process", lim.Max, n)
	}
	c := startAttacherCluster(tb)
	computers := createSimComputers(tb, c.clients(tb, "load"), n)
	r := clusterAttachers{n: n, killed: 1}
	for _, p := range c.procs {
		r.rssBefore = append(r.rssBefore, p.rss(tb))
	}
	fleet := startFleet(c.ca.tls, computers)
	defer fleet.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if err := fleet.waitAttaches(ctx, int64(n)); err != nil {
		tb.Fatal(err)
	}
	r.firstAttach = time.Since(start)
	time.Sleep(settle) // handshakes done, buffers returned
	r.attached = c.live(fleet)
	for _, p := range c.procs {
		r.rss = append(r.rss, p.rss(tb))
	}
	if sum(r.attached) != int64(n) {
		tb.Fatalf("%v sessions on the nodes once all had attached, want %d in all", r.attached, n)
	}

	st, err := c.admin(r.killed).Status(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range st.Streams {
		if s.Leader == c.names[r.killed] {
			r.ledByKilled = append(r.ledByKilled, s.Name)
		}
	}
	dead := c.urls[r.killed]
	c.procs[r.killed].kill()
	start = time.Now()
	if err := fleet.waitFor(ctx, func() (bool, string) {
		on, all := fleet.liveOn(dead), fleet.liveTotal()
		return on == 0 && all == int64(n), fmt.Sprintf("%d sessions on the killed node, %d of %d up", on, all, n)
	}); err != nil {
		tb.Fatal(err)
	}
	r.landAgain = time.Since(start)
	// The survivors agree: every Space has one session on one of them.
	if err := fleet.waitFor(ctx, func() (bool, string) {
		var sessions []int
		for i := range c.procs {
			if i == r.killed {
				continue
			}
			st, err := c.admin(i).Node(ctx)
			if err != nil {
				return false, err.Error()
			}
			sessions = append(sessions, st.Sessions)
		}
		return sessions[0]+sessions[1] == n, fmt.Sprintf("the survivors hold %v sessions, want %d in all", sessions, n)
	}); err != nil {
		tb.Fatal(err)
	}
	time.Sleep(settle)
	r.attachedAfter = c.live(fleet)
	for i, p := range c.procs {
		if i == r.killed {
			r.rssAfter = append(r.rssAfter, 0)
			continue
		}
		r.rssAfter = append(r.rssAfter, p.rss(tb))
	}
	return r
}

// live is the sessions up on each node now, as the Spaces see them.
func (c *attacherCluster) live(f *simFleet) []int64 {
	var out []int64
	for _, u := range c.urls {
		out = append(out, f.liveOn(u))
	}
	return out
}

func sum(xs []int64) (s int64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestClusterAttachersLandAgain is the benchmark's scenario at a small
// scale, so that its path runs in make test-relay: 300 Spaces spread over
// three relay processes, one killed, every one of its Spaces attached
// again on the other two.
func TestClusterAttachersLandAgain(t *testing.T) {
	r := runClusterAttachers(t, 300, 0)
	t.Logf("attached at first %v in %v; node %d killed (it led %v), all landed again in %v: %v", r.attached, r.firstAttach, r.killed, r.ledByKilled, r.landAgain, r.attachedAfter)
	for i, got := range r.attached {
		if got == 0 {
			t.Errorf("no Space attached to node %d at first (%v): they were not spread", i, r.attached)
		}
	}
	if r.attachedAfter[r.killed] != 0 || sum(r.attachedAfter) != int64(r.n) {
		t.Errorf("after the kill: %v sessions on the nodes, want %d on the survivors", r.attachedAfter, r.n)
	}
}

// BenchmarkClusterIdleAttachers: 10,000 simulated Spaces (CUA_BENCH_ATTACHERS)
// spread over three clustered relay nodes, each a process of its own. It
// reports each node's RSS, KiB per attached computer and computers per GiB
// (target at least 10,000 on each), beside one node alone (its own
// benchmark, BenchmarkRelayIdleAttachers, in the same make bench run; last
// measured 65.5 KiB/computer), and the time for all to attach; then it
// kills one node (SIGKILL) and reports the time until every one of its
// computers is attached again on the other two, and their RSS after.
func BenchmarkClusterIdleAttachers(b *testing.B) {
	r := runClusterAttachers(b, attachersCount(), 5*time.Second)
	names := []string{"a", "b", "c"}
	mib := func(x int64) float64 { return float64(x) / (1 << 20) }
	kib := func(grew, computers int64) float64 { return float64(grew) / float64(max(computers, 1)) / 1024 }
	perGiB := func(computers, rss int64) float64 { return float64(computers) / (float64(rss) / (1 << 30)) }
	var line []string
	for i, name := range names {
		b.ReportMetric(float64(r.attached[i]), name+"-computers")
		b.ReportMetric(mib(r.rss[i]), name+"-RSS-MiB")
		b.ReportMetric(kib(r.rss[i]-r.rssBefore[i], r.attached[i]), name+"-KiB/computer")
		b.ReportMetric(perGiB(r.attached[i], r.rss[i]), name+"-computers/GiB")
		line = append(line, fmt.Sprintf("node %s %d computers, RSS %.0f MiB, %.1f KiB/computer, %.0f computers/GiB",
			name, r.attached[i], mib(r.rss[i]), kib(r.rss[i]-r.rssBefore[i], r.attached[i]), perGiB(r.attached[i], r.rss[i])))
	}
	grewAll := sum(r.rss) - sum(r.rssBefore)
	b.ReportMetric(float64(r.n), "computers")
	b.ReportMetric(kib(grewAll, int64(r.n)), "KiB/computer")
	// What one more GiB holds, the nodes' fixed part (NATS, JetStream) aside.
	b.ReportMetric((1<<20)/kib(grewAll, int64(r.n)), "marginal-computers/GiB")
	b.ReportMetric(r.firstAttach.Seconds(), "s-to-attach-all")
	b.ReportMetric(float64(r.attached[r.killed]), "computers-on-killed-node")
	b.ReportMetric(r.landAgain.Seconds(), "s-to-land-again-after-kill")
	var after []string
	for i, name := range names {
		if i == r.killed {
			continue
		}
		b.ReportMetric(mib(r.rssAfter[i]), name+"-RSS-after-kill-MiB")
		b.ReportMetric(perGiB(r.attachedAfter[i], r.rssAfter[i]), name+"-computers/GiB-after-kill")
		after = append(after, fmt.Sprintf("node %s %d computers, RSS %.0f MiB, %.1f KiB/computer, %.0f computers/GiB",
			name, r.attachedAfter[i], mib(r.rssAfter[i]), kib(r.rssAfter[i]-r.rssBefore[i], r.attachedAfter[i]), perGiB(r.attachedAfter[i], r.rssAfter[i])))
	}
	b.ReportMetric(0, "ns/op")
	fmt.Printf("attachers cluster of 3: %d computers all attached in %.1f s; %s; %.1f KiB/computer over the three, %.0f computers per GiB more (one node alone: the line above, same run; last measured 65.5 KiB/computer)\n",
		r.n, r.firstAttach.Seconds(), strings.Join(line, "; "), kib(grewAll, int64(r.n)), (1<<20)/kib(grewAll, int64(r.n)))
	led := "none"
	if len(r.ledByKilled) > 0 {
		led = strings.Join(r.ledByKilled, ", ")
	}
	fmt.Printf("attachers cluster of 3: node %s killed (SIGKILL) with %d computers, leading these of the store's streams: %s; all attached again on the other two in %.2f s; then %s\n",
		names[r.killed], r.attached[r.killed], led, r.landAgain.Seconds(), strings.Join(after, "; "))
}
