package relaysvc

import (
	"errors"
	"slices"
	"time"
)

// redial chooses the URL of the next dial and how long to wait before it.
//
// The URLs are the nodes of one relay (a cluster hands them all out with
// the computer token). A round tries each URL once, starting at the node
// of the last good session: a move to a URL not yet tried in the round
// goes at once (the node that failed says nothing of the others), except
// after a go_away, which is waited out; once every URL failed, the
// backoff waits before the next round. With one URL a round is one dial,
// and the waits are the backoff's, as they always were.
type redial struct {
	cur   int // index of the URL dialled last
	tried int // URLs tried in this round, cur included
	b     backoff
}

func newRedial(att attachment, rand func() float64) *redial {
	return &redial{cur: max(0, slices.Index(att.URLs, att.LastURL)), b: backoff{rand: rand}}
}

// url is the URL to dial now.
func (r *redial) url(urls []string) string { return urls[r.cur%len(urls)] }

// after moves past a session that ended with err (res: whether it came up,
// how long it lasted) on one of n URLs, and answers the wait before the
// next dial.
func (r *redial) after(n int, res sessionResult, err error) time.Duration {
	if res.up {
		r.tried = 0 // a new round, from the node that worked
	}
	if res.lasted >= HealthyReset {
		r.b.reset()
	}
	if errors.Is(err, errClockJump) {
		return 0 // the node was fine; the machine was paused
	}
	r.cur = (r.cur + 1) % max(n, 1)
	r.tried++
	roundOver := r.tried >= n
	if roundOver {
		r.tried = 0
	}
	var goAway *goAwayError
	var refused *dialRefusedError
	switch {
	case errors.As(err, &refused) && refused.tokenRefused():
		// Every node checks the same token: another node is no cure.
		return max(RefusedRetry, r.b.next())
	case errors.As(err, &goAway) && !roundOver:
		return goAway.m.RetryAfter.Duration()
	case errors.As(err, &goAway):
		return max(goAway.m.RetryAfter.Duration(), r.b.next())
	case !roundOver:
		return 0
	case errors.As(err, &refused):
		return max(refused.RetryAfter, r.b.next())
	default:
		return r.b.next()
	}
}
