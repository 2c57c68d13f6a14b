package mcp_test

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkMCPSpaceBashTrue is one tools/call space_bash "true" through the
// bridge over streamable HTTP (official SDK client) to a real spacesd on
// loopback. It reports the median besides the mean.
func BenchmarkMCPSpaceBashTrue(b *testing.B) {
	e := newEnv(b)
	cs := e.client(b, nil)
	args := map[string]any{"space": "s1", "command": "true"}
	for range 5 { // warm connections and the capabilities cache
		call(b, cs, "space_bash", args)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		r := call(b, cs, "space_bash", args)
		durs = append(durs, time.Since(start))
		if r.IsError {
			b.Fatal(text(r))
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	if len(durs) > 0 {
		b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
	}
}
