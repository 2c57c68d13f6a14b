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

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/store"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
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
	// TURN runs the relay's TURN server with these settings (nil: none).
	// Start fills in the secret (the store's), the logger and the clock;
	// a TLSAddr without a TLSConfig uses TLS.
	TURN *turnsvc.Options
	// Cluster makes this node one of a cluster of relay nodes on clustered
	// NATS (nil: a single node); Node must then be unique in the cluster.
	Cluster *store.ClusterOptions
}

// Relay is a running relay node.
type Relay struct {
	Server *Server
	Store  *store.Store
	URLs   []string
	// TURN is the running TURN server, nil when Options.TURN was.
	TURN *turnsvc.Server

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
	st, err := store.Open(ctx, o.DataDir, o.Logger, store.Options{Node: o.Node, Cluster: o.Cluster})
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
	cfg := Config{Store: st, Logger: o.Logger, Node: o.Node, URLs: o.URLs, Version: o.Version, Limits: o.Limits, Clock: o.Clock}
	var ts *turnsvc.Server
	if o.TURN != nil {
		if ts, err = startTURN(ctx, *o.TURN, o, st); err != nil {
			adminLn.Close()
			st.Close()
			return nil, err
		}
		cfg.TURN = ts
	}
	srv, err := New(cfg)
	if err != nil {
		adminLn.Close()
		if ts != nil {
			ts.Close()
		}
		st.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Relay{Server: srv, Store: st, URLs: o.URLs, TURN: ts, cancel: cancel}
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

// startTURN starts the TURN server with the store's secret: every node of
// the relay, and the node after a restart, checks the same credentials.
func startTURN(ctx context.Context, t turnsvc.Options, o Options, st *store.Store) (*turnsvc.Server, error) {
	t.Secret = st.TURNSecret()
	if t.Logger == nil {
		t.Logger = o.Logger
	}
	if t.Clock == nil && o.Clock != nil {
		t.Clock = o.Clock.Now
	}
	if t.TLSAddr != "" && t.TLSConfig == nil {
		if o.TLS == nil {
			return nil, api.Errorf(api.KindInvalidArgument, "TURN over TLS on %s: the relay has no TLS certificate", t.TLSAddr)
		}
		t.TLSConfig = o.TLS
	}
	ts, err := turnsvc.New(ctx, t)
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "TURN: %w", err)
	}
	return ts, nil
}

// Close shuts the node down: GoAway to every Space, close the sessions,
// stop serving, stop TURN, close the store.
func (r *Relay) Close() error {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		if r.TURN != nil {
			_ = r.TURN.Close()
		}
		r.err = r.Store.Close()
	})
	return r.err
}
