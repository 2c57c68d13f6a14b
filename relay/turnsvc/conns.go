package turnsvc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/logging"
)

// connLimiter is a TCP listener for pion that bounds the connections open
// at once, gives each a read deadline (a handshake and first message
// within firstReadTimeout, then no silence longer than idleTimeout), and
// closes what is left on closeConns: pion closes its listeners only.
type connLimiter struct {
	net.Listener
	m   *meter
	max int

	mu     sync.Mutex
	conns  map[*limitedConn]struct{}
	closed bool
}

func newConnLimiter(ln net.Listener, m *meter, max int) *connLimiter {
	return &connLimiter{Listener: ln, m: m, max: max, conns: map[*limitedConn]struct{}{}}
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.closed || len(l.conns) >= l.max {
			l.mu.Unlock()
			l.m.connsRefused.Add(1)
			c.Close()
			continue
		}
		lc := &limitedConn{Conn: c, l: l}
		lc.timeout.Store(int64(firstReadTimeout))
		l.conns[lc] = struct{}{}
		l.mu.Unlock()
		l.m.conns.Add(1)
		return lc, nil
	}
}

func (l *connLimiter) closeConns() {
	l.mu.Lock()
	l.closed = true
	all := make([]*limitedConn, 0, len(l.conns))
	for c := range l.conns {
		all = append(all, c)
	}
	l.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
}

type limitedConn struct {
	net.Conn
	l       *connLimiter
	timeout atomic.Int64 // a time.Duration; atomic as a TLS handshake may read from a writer's goroutine
	once    sync.Once
}

func (c *limitedConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(time.Duration(c.timeout.Load())))
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.timeout.Store(int64(idleTimeout))
	}
	return n, err
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.m.conns.Add(-1)
	})
	return c.Conn.Close()
}

// loggerFactory sends pion's lines to slog, all at Debug: pion calls a
// refused request from the internet an error, and there are many.
type loggerFactory struct{ log *slog.Logger }

func (f loggerFactory) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{f.log.With("scope", scope)}
}

type pionLogger struct{ log *slog.Logger }

func (p pionLogger) Trace(string)              {}
func (p pionLogger) Tracef(string, ...any)     {}
func (p pionLogger) Debug(msg string)          { p.log.Debug(msg) }
func (p pionLogger) Debugf(f string, a ...any) { p.logf(f, a) }
func (p pionLogger) Info(msg string)           { p.log.Debug(msg) }
func (p pionLogger) Infof(f string, a ...any)  { p.logf(f, a) }
func (p pionLogger) Warn(msg string)           { p.log.Debug(msg) }
func (p pionLogger) Warnf(f string, a ...any)  { p.logf(f, a) }
func (p pionLogger) Error(msg string)          { p.log.Debug(msg) }
func (p pionLogger) Errorf(f string, a ...any) { p.logf(f, a) }

// logf formats only when Debug is on: pion logs per packet at times.
func (p pionLogger) logf(f string, a []any) {
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug(fmt.Sprintf(f, a...))
	}
}
