package relaysvc

import "time"

// Backoffs draws the first n waits of a backoff whose jitter is r.
func Backoffs(r func() float64, n int) []time.Duration {
	b := backoff{rand: r}
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = b.next()
	}
	return out
}

// ClockJumped exposes clockJumped.
var ClockJumped = clockJumped
