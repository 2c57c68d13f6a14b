package server

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds (seconds) of the request latency
// histogram: fine below 10 ms, where most calls land, coarse above.
var latencyBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30}

// metrics is a small Prometheus text exposition: a client library would
// more than double the idle footprint for a handful of series.
type metrics struct {
	mu       sync.Mutex
	requests map[requestKey]uint64
	latency  map[string]*histogram

	// counters and gauges are the services' own (see Metrics).
	counters map[string]*atomic.Int64
	gauges   map[string]func() float64
}

type requestKey struct {
	route  string
	status int
}

type histogram struct {
	counts []uint64 // one per bucket, then +Inf
	sum    float64
	n      uint64
}

func newMetrics() *metrics {
	m := &metrics{requests: map[requestKey]uint64{}, latency: map[string]*histogram{},
		counters: map[string]*atomic.Int64{}, gauges: map[string]func() float64{}}
	// Listed from the start, so a scrape shows them at zero.
	for _, name := range []string{MetricBytesIn, MetricBytesOut, MetricProcessesStarted} {
		m.Counter(name)
	}
	return m
}

// Counter returns the counter of that name, made on first use.
func (m *metrics) Counter(name string) Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counters[name]
	if c == nil {
		c = new(atomic.Int64)
		m.counters[name] = c
	}
	return c
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{route, status}]++
	h := m.latency[route]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.latency[route] = h
	}
	sec := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets, sec)
	h.counts[i]++
	h.sum += sec
	h.n++
}

// Gauge registers a value read at scrape time.
func (m *metrics) Gauge(name string, f func() float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges[name] = f
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# TYPE cua_spacesd_requests_total counter")
	keys := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].route != keys[j].route {
			return keys[i].route < keys[j].route
		}
		return keys[i].status < keys[j].status
	})
	for _, k := range keys {
		fmt.Fprintf(w, "cua_spacesd_requests_total{route=%q,status=\"%d\"} %d\n", k.route, k.status, m.requests[k])
	}
	fmt.Fprintln(w, "# TYPE cua_spacesd_request_duration_seconds histogram")
	routes := make([]string, 0, len(m.latency))
	for r := range m.latency {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		h := m.latency[r]
		var cum uint64
		for i, b := range latencyBuckets {
			cum += h.counts[i]
			fmt.Fprintf(w, "cua_spacesd_request_duration_seconds_bucket{route=%q,le=\"%g\"} %d\n", r, b, cum)
		}
		cum += h.counts[len(latencyBuckets)]
		fmt.Fprintf(w, "cua_spacesd_request_duration_seconds_bucket{route=%q,le=\"+Inf\"} %d\n", r, cum)
		fmt.Fprintf(w, "cua_spacesd_request_duration_seconds_sum{route=%q} %g\n", r, h.sum)
		fmt.Fprintf(w, "cua_spacesd_request_duration_seconds_count{route=%q} %d\n", r, h.n)
	}
	names := make([]string, 0, len(m.counters))
	for n := range m.counters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "# TYPE %s counter\n%s %d\n", n, n, m.counters[n].Load())
	}
	names = names[:0]
	for n := range m.gauges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "# TYPE %s gauge\n%s %g\n", n, n, m.gauges[n]())
	}
}
