package relayd

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/trycua/cua-spacesd/relay/store"
)

// Options start a whole relay node in process (Start): the store on
// DataDir, the HTTPS server on a listener, the admin socket.
type Options struct {
	DataDir string
	Node    string
	// URLs are the public wss:// URLs given to Spaces (ComputerToken.URLs);
	// default: wss://<the listener's address>.
	URLs    []string
	TLS     *tls.Config // nil: plain HTTP (behind a TLS-terminating proxy)
	Logger  *slog.Logger
	Version string
	Limits  Limits
	Clock   Clock
}

// Relay is a running relay node.
type Relay struct {
	Server *Server
	Store  *store.Store
	URLs   []string

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

// Start opens the store, and serves ln and DataDir/admin.sock until Close.
func Start(ctx context.Context, ln net.Listener, o Options) (*Relay, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, err
	}
	// The admin socket first: a second relay on the data dir stops here,
	// before it touches the store.
	adminLn, err := ListenAdmin(o.DataDir)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, o.DataDir, o.Logger, store.Options{Node: o.Node})
	if err != nil {
		adminLn.Close()
		return nil, err
	}
	if len(o.URLs) == 0 {
		scheme := "wss://"
		if o.TLS == nil {
			scheme = "ws://"
		}
		o.URLs = []string{scheme + ln.Addr().String()}
	}
	srv, err := New(Config{Store: st, Logger: o.Logger, Node: o.Node, URLs: o.URLs, Version: o.Version, Limits: o.Limits, Clock: o.Clock})
	if err != nil {
		adminLn.Close()
		st.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Relay{Server: srv, Store: st, URLs: o.URLs, cancel: cancel}
	r.wg.Go(func() {
		if err := srv.ServeAdmin(rctx, adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("relay admin socket", "err", err)
		}
	})
	r.wg.Go(func() {
		if err := srv.Serve(rctx, ln, o.TLS); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("relay serve", "err", err)
		}
	})
	return r, nil
}

// Close shuts the node down: GoAway to every Space, close the sessions,
// stop serving, close the store.
func (r *Relay) Close() error {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.err = r.Store.Close()
	})
	return r.err
}
