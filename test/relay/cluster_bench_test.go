package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// BenchmarkClusterExecTrue: exec true on a real Space attached to node b
// of three, its owner through b itself (same node) and through node a (the
// hop over the NATS trunk), same run (target: the hop adds <= 1 ms at p50);
// then a PTY's echo round trip both ways.
func BenchmarkClusterExecTrue(b *testing.B) {
	c := newCluster(b, "a", "b", "c")
	tok := c.user(b, "alice")
	onB := newBridgeAt(b, c.url(1), c.caFile, tok)
	s := startSpace(b, "")
	onB.addSpace(b, "box", s)
	onB.register(b, "box")
	s.waitConnected(b, 0)
	onA := newBridgeAt(b, c.url(0), c.caFile, tok)
	for _, path := range []struct {
		name string
		via  *bridge
	}{{"same-node", onB}, {"cross-node", onA}} {
		cl, _, err := path.via.reg.Client("relay:box")
		if err != nil {
			b.Fatal(err)
		}
		exec := func() time.Duration {
			start := time.Now()
			res, err := cl.Exec(context.Background(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("exec: %+v, %v", res, err)
			}
			return time.Since(start)
		}
		// Warm: the bridge's connection, the pools, the trunk; and the
		// directory's entry, which crosses the routes a moment after the
		// attach.
		deadline := time.Now().Add(waitTimeout)
		for {
			res, err := cl.Exec(context.Background(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}})
			if err == nil && res.ExitCode == 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("exec through %s: %v", path.name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.Run("exec/"+path.name, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				ds = append(ds, exec())
			}
			reportLatency(b, ds)
		})
		b.Run("pty-echo/"+path.name, func(b *testing.B) {
			e := startPTYEcho(b, cl)
			e.roundTrip(b)
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				ds = append(ds, e.roundTrip(b))
			}
			reportLatency(b, ds)
		})
	}
}
