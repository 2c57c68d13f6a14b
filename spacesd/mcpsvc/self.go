package mcpsvc

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api/client"
)

// selfURL is the base URL of the daemon's own routes as the built-in tools
// call them: a loopback name, which a daemon without a token requires, on
// a connection that never leaves the process.
const selfURL = "http://127.0.0.1"

// maxSelfClients bounds the clients kept, one per token seen: a token is
// rotated rarely, and an old one's client only fails.
const maxSelfClients = 4

// self is how the built-in tools reach the daemon: the daemon's own HTTP
// surface (auth, feature gates, limits and all), served over in-memory
// connections, with the caller's own token. A built-in tool is then the
// bridge's tool with a different client, and can do nothing its caller
// could not do with the token it showed.
type self struct {
	ln  *memListener
	srv *http.Server

	mu      sync.Mutex
	clients map[string]*client.Client
}

func newSelf(h http.Handler, log *slog.Logger) *self {
	s := &self{
		ln:      newMemListener(),
		clients: map[string]*client.Client{},
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	go func() { _ = s.srv.Serve(s.ln) }()
	return s
}

// client is a client of the daemon that shows token.
func (s *self) client(token string) (*client.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[token]; ok {
		return c, nil
	}
	c, err := client.New(selfURL, token, client.WithDialer(s.ln.dial))
	if err != nil {
		return nil, err
	}
	if len(s.clients) >= maxSelfClients {
		clear(s.clients)
	}
	s.clients[token] = c
	return c, nil
}

func (s *self) close() { _ = s.srv.Close() }

// bearerOf is the token an HTTP request showed ("" for none).
func bearerOf(h http.Header) string {
	tok, _ := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(tok)
}

// memListener is a net.Listener whose connections are in-memory pipes
// made by dial.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

// dial connects to the listener; network and address are the URL's, and
// mean nothing here.
func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	var err error
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		err = net.ErrClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	_, _ = c.Close(), s.Close()
	return nil, err
}

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "cua-spacesd" }
