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
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// selfURL is the base URL of the daemon's own routes as the built-in tools
// call them: a loopback name, which a daemon without a token requires, on
// a connection that never leaves the process.
const selfURL = "http://127.0.0.1"

// maxSelfClients bounds the clients kept, one per token seen: a token is
// rotated rarely, and an old one's client only fails.
const maxSelfClients = 4

// self is how the built-in tools reach the daemon: the daemon's own HTTP
// surface (auth, roles, feature gates, limits and all), served over
// in-memory connections, as the MCP caller itself. A caller with the
// token reaches it with that token; a caller its connection brought (a
// person through the relay) on connections the daemon serves as that same
// principal (server.Host.ServeConn), so every inner route checks the
// person's role, and a kick of the person ends them. A built-in tool is
// then the bridge's tool with a different client, and can do nothing its
// caller could not do directly.
type self struct {
	ln  *memListener
	srv *http.Server
	// serveConn and hold are the daemon's (server.Host): they serve a
	// principal's connection, and tie its life to the person's access.
	serveConn func(net.Conn, server.Principal) error
	hold      func(context.Context, server.Caller) (context.Context, context.CancelCauseFunc)

	mu         sync.Mutex
	clients    map[string]*client.Client
	principals map[principalKey]*principalClient
	closed     bool
}

func newSelf(h server.Host, log *slog.Logger) *self {
	s := &self{
		ln:         newMemListener(),
		serveConn:  h.ServeConn,
		hold:       h.Hold,
		clients:    map[string]*client.Client{},
		principals: map[principalKey]*principalClient{},
		srv: &http.Server{
			Handler:           h.Handler,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	go func() { _ = s.srv.Serve(s.ln) }()
	return s
}

// clientFor is the client of the daemon that acts as c, the caller of an
// MCP request: c's principal when its connection brought one, else the
// token the request showed (tok).
func (s *self) clientFor(c server.Caller, tok string) (*client.Client, error) {
	if c.Principal != nil {
		return s.principal(c)
	}
	return s.client(tok)
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

// close stops serving the token's clients and ends the principals'.
func (s *self) close() {
	_ = s.srv.Close()
	s.mu.Lock()
	s.closed = true
	out := s.principals
	s.principals = map[principalKey]*principalClient{}
	s.mu.Unlock()
	for _, pc := range out {
		pc.end(server.ErrShutdown)
	}
}

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
