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
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/yamux"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/tunnel"
)

// simAttacher is a simulated Space for the load benchmarks: the control
// session of a real one (WSS, yamux, Hello, heartbeats answered, redial
// with full-jitter backoff after a cut), without the daemon behind it. Ten
// thousand of them in one process stand for ten thousand idle Spaces.
type simAttacher struct {
	url, token string
	tls        *tls.Config
	// attached is called each time a session is up.
	attached func()
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

// run keeps a session up until ctx ends.
func (a *simAttacher) run(ctx context.Context) {
	const base, ceiling, healthy = 500 * time.Millisecond, 30 * time.Second, 30 * time.Second
	attempt := 0
	for ctx.Err() == nil {
		start := time.Now()
		err := a.session(ctx)
		if ctx.Err() != nil {
			return
		}
		var ga goAwayError
		if errors.As(err, &ga) {
			sleep(ctx, ga.after+time.Duration(rand.Int64N(int64(ga.after)+1)))
			attempt = 0
			continue
		}
		if time.Since(start) > healthy {
			attempt = 0
		}
		// Full jitter: a uniform wait in [0, min(ceiling, base*2^attempt)].
		d := min(ceiling, base<<min(attempt, 10))
		attempt++
		sleep(ctx, time.Duration(rand.Int64N(int64(d)+1)))
	}
}

type goAwayError struct{ after time.Duration }

func (e goAwayError) Error() string { return fmt.Sprintf("go away, come back after %v", e.after) }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (a *simAttacher) session(ctx context.Context) error {
	d := websocket.Dialer{TLSClientConfig: a.tls, HandshakeTimeout: 30 * time.Second,
		ReadBufferSize: 4096, WriteBufferSize: 4096}
	h := http.Header{"Authorization": {"Bearer " + a.token}}
	ws, _, err := d.DialContext(ctx, a.url+relayapi.PathAttach, h)
	if err != nil {
		return err
	}
	conn := tunnel.NewWSConn(ws)
	defer conn.Close()
	sess, err := yamux.Client(conn, tunnel.Config(nil))
	if err != nil {
		return err
	}
	defer sess.Close()
	ctl, err := sess.OpenStream()
	if err != nil {
		return err
	}
	w := protocol.NewWriter(ctl, tunnel.WriteTimeout)
	r := protocol.NewReader(ctl)
	if err := w.WriteMessage(protocol.NewHello("", "sim")); err != nil {
		return err
	}
	m, err := r.ReadMessage()
	if err != nil {
		return err
	}
	if _, ok := m.(protocol.Welcome); !ok {
		return fmt.Errorf("first frame %T, want a welcome", m)
	}
	a.attached()
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
			return err
		}
		switch m := m.(type) {
		case protocol.Ping:
			if err := w.WriteMessage(protocol.Pong{Nonce: m.Nonce, SentAt: m.SentAt}); err != nil {
				return err
			}
		case protocol.GoAway:
			return goAwayError{m.RetryAfter.Duration()}
		case protocol.Close:
			return fmt.Errorf("closed: %s", m.Code)
		}
	}
}

// simFleet runs many simulated attachers; attaches counts every session
// that came up, first ones and re-attaches alike.
type simFleet struct {
	attaches atomic.Int64
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

func startFleet(url string, cfg *tls.Config, tokens []string) *simFleet {
	ctx, cancel := context.WithCancel(context.Background())
	f := &simFleet{cancel: cancel}
	for _, tok := range tokens {
		a := &simAttacher{url: url, token: tok, tls: cfg, attached: func() { f.attaches.Add(1) }}
		f.wg.Add(1)
		go func() { defer f.wg.Done(); a.run(ctx) }()
	}
	return f
}

// waitAttaches waits until n sessions in all came up, or ctx ends.
func (f *simFleet) waitAttaches(ctx context.Context, n int64) error {
	for f.attaches.Load() < n {
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d attaches: %w", f.attaches.Load(), n, ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func (f *simFleet) stop() { f.cancel(); f.wg.Wait() }
