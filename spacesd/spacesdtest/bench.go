package spacesdtest

import (
	"slices"
	"time"
)

// Percentile is the p-th percentile of ds (nearest rank), 0 for none: a
// benchmark's latency figure.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
