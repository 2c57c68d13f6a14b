package relay_test

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/yamux"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/tunnel"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
)

// simAttacher is a simulated Space for the load benchmarks: the control
// session of a real one (WSS, yamux, Hello, heartbeats answered, redial
// through the relay's URLs as the daemon's attacher does), without the
// daemon behind it. Ten thousand of them in one process stand for ten
// thousand idle Spaces.
type simAttacher struct {
	simComputer
	tls *tls.Config
	// up is called when a session on url comes up, and down when it ends.
	up, down func(url string)
}

// simComputer is what a Space is given at registration: its token and the
// relay's attach URLs (ComputerToken), the first dialled first.
type simComputer struct {
	token string
	urls  []string
}

// pinnedTLS trusts exactly the certificate of that fingerprint, as a
// Space given --relay-fingerprint does.
func pinnedTLS(fingerprint string) (*tls.Config, error) {
	want, err := api.ParseFingerprint(fingerprint)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		InsecureSkipVerify: true, // replaced by the pin below
		MinVersion:         tls.VersionTLS12,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("no certificate")
			}
			got := sha256.Sum256(raw[0])
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				return errors.New("certificate does not match the pinned fingerprint")
			}
			return nil
		},
	}, nil
}

// run keeps a session up until ctx ends, with the daemon's redial policy
// (spacesd/relaysvc's redial.go, its constants): a round tries each URL
// once, moving on at once when a node fails (after a go_away, its delay),
// starting from the node of the last good session; a full-jitter backoff
// waits between rounds, reset after a session that lasted HealthyReset.
func (a *simAttacher) run(ctx context.Context) {
	var backoff backoffSim
	cur, tried := 0, 0
	for ctx.Err() == nil {
		start := time.Now()
		up, err := a.session(ctx, a.urls[cur])
		if ctx.Err() != nil {
			return
		}
		if up {
			tried = 0
			if time.Since(start) >= relaysvc.HealthyReset {
				backoff.attempt = 0
			}
		}
		cur = (cur + 1) % len(a.urls)
		tried++
		roundOver := tried >= len(a.urls)
		if roundOver {
			tried = 0
		}
		var ga goAwayError
		var refused refusedError
		var wait time.Duration
		switch {
		case errors.As(err, &ga) && !roundOver:
			wait = ga.after
		case errors.As(err, &ga):
			wait = max(ga.after, backoff.next())
		case !roundOver:
		case errors.As(err, &refused):
			wait = max(refused.after, backoff.next())
		default:
			wait = backoff.next()
		}
		sleep(ctx, wait)
	}
}

// backoffSim is the daemon's full-jitter backoff: the nth wait uniform in
// [0, min(BackoffMax, BackoffMin·2ⁿ)).
type backoffSim struct{ attempt int }

func (b *backoffSim) next() time.Duration {
	d := min(relaysvc.BackoffMax, relaysvc.BackoffMin<<min(b.attempt, 10))
	b.attempt++
	return time.Duration(rand.Int64N(int64(d)))
}

type goAwayError struct{ after time.Duration }

func (e goAwayError) Error() string { return fmt.Sprintf("go away, come back after %v", e.after) }

// refusedError is an attach the relay answered with an HTTP error and a
// Retry-After (busy, draining).
type refusedError struct {
	status int
	after  time.Duration
}

func (e refusedError) Error() string {
	return fmt.Sprintf("attach refused (%d), retry after %v", e.status, e.after)
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// session dials url and keeps the session until it ends; up says whether
// it came up.
func (a *simAttacher) session(ctx context.Context, url string) (up bool, err error) {
	d := websocket.Dialer{TLSClientConfig: a.tls, HandshakeTimeout: 30 * time.Second,
		ReadBufferSize: 4096, WriteBufferSize: 4096}
	h := http.Header{"Authorization": {"Bearer " + a.token}}
	ws, resp, err := d.DialContext(ctx, url+relayapi.PathAttach, h)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
			if s, aerr := strconv.Atoi(resp.Header.Get("Retry-After")); aerr == nil && s > 0 {
				return false, refusedError{status: resp.StatusCode, after: min(time.Duration(s)*time.Second, protocol.MaxRetryAfter)}
			}
		}
		return false, err
	}
	conn := tunnel.NewWSConn(ws)
	defer conn.Close()
	sess, err := yamux.Client(conn, tunnel.Config(nil))
	if err != nil {
		return false, err
	}
	defer sess.Close()
	ctl, err := sess.OpenStream()
	if err != nil {
		return false, err
	}
	w := protocol.NewWriter(ctl, tunnel.WriteTimeout)
	r := protocol.NewReader(ctl)
	if err := w.WriteMessage(protocol.NewHello("", "sim")); err != nil {
		return false, err
	}
	m, err := r.ReadMessage()
	if err != nil {
		return false, err
	}
	if _, ok := m.(protocol.Welcome); !ok {
		return false, fmt.Errorf("first frame %T, want a welcome", m)
	}
	a.up(url)
	defer a.down(url)
	stop := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer stop()
	// Relayed streams are not expected while idle: refuse any.
	go func() {
		for {
			st, err := sess.Accept()
			if err != nil {
				return
			}
			_ = st.Close()
		}
	}()
	for {
		m, err := r.ReadMessage()
		if err != nil {
			return true, err
		}
		switch m := m.(type) {
		case protocol.Ping:
			if err := w.WriteMessage(protocol.Pong{Nonce: m.Nonce, SentAt: m.SentAt}); err != nil {
				return true, err
			}
		case protocol.GoAway:
			return true, goAwayError{m.RetryAfter.Duration()}
		case protocol.Close:
			return true, fmt.Errorf("closed: %s", m.Code)
		}
	}
}

// simFleet runs many simulated attachers; attaches counts every session
// that came up, first ones and re-attaches alike, and live the sessions up
// now on each URL.
type simFleet struct {
	attaches atomic.Int64
	live     map[string]*atomic.Int64 // by URL; made before the attachers start
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

func startFleet(cfg *tls.Config, computers []simComputer) *simFleet {
	ctx, cancel := context.WithCancel(context.Background())
	f := &simFleet{cancel: cancel, live: map[string]*atomic.Int64{}}
	for _, c := range computers {
		for _, u := range c.urls {
			if f.live[u] == nil {
				f.live[u] = new(atomic.Int64)
			}
		}
	}
	for _, c := range computers {
		a := &simAttacher{simComputer: c, tls: cfg,
			up:   func(url string) { f.live[url].Add(1); f.attaches.Add(1) },
			down: func(url string) { f.live[url].Add(-1) }}
		f.wg.Go(func() { a.run(ctx) })
	}
	return f
}

// waitAttaches waits until n sessions in all came up, or ctx ends.
func (f *simFleet) waitAttaches(ctx context.Context, n int64) error {
	return f.waitFor(ctx, func() (bool, string) {
		got := f.attaches.Load()
		return got >= n, fmt.Sprintf("%d of %d attaches", got, n)
	})
}

// liveOn is how many sessions are up on url now.
func (f *simFleet) liveOn(url string) int64 {
	if c := f.live[url]; c != nil {
		return c.Load()
	}
	return 0
}

// liveTotal is how many sessions are up now, on any URL.
func (f *simFleet) liveTotal() int64 {
	var n int64
	for _, c := range f.live {
		n += c.Load()
	}
	return n
}

// waitFor polls done until it holds or ctx ends (with done's account of
// where it stands).
func (f *simFleet) waitFor(ctx context.Context, done func() (bool, string)) error {
	for {
		ok, where := done()
		if ok {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", where, ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *simFleet) stop() { f.cancel(); f.wg.Wait() }
