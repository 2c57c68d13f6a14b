package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// ClusterOptions make the embedded nats-server one node of a cluster: it
// listens for routes from the other nodes (clients still cannot use it:
// see serverOptions) and JetStream is clustered, its buckets and the
// audit stream replicated on up to three nodes.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Listen is host:port of this node's route listener.
	Listen string
	// Routes are nats://host:port of the other nodes' route listeners
	// (this node's own may be in the list: nats-server skips it).
	Routes []string
	// Key is the mesh key, the same on every node (MinKeyLen bytes or
	// more): a route that does not present it is refused, so nothing but
	// the relay's nodes joins.
	Key []byte
	// TLS secures the routes (nil: plain TCP, for a private network or
	// loopback). It is used both ways: its certificate is presented and
	// the others' are verified (RootCAs, and ClientCAs with
	// tls.RequireAndVerifyClientCert).
	TLS *tls.Config
}

// MinKeyLen is the shortest mesh key accepted.
const MinKeyLen = 16

// Replication.
const (
	// MaxReplicas is the replicas of every stream once the cluster has
	// that many nodes: a quorum survives one node's loss.
	MaxReplicas = 3
	// routeUser is the user name routes present; the password is derived
	// from the mesh key (routePassword).
	routeUser = "cua-relay-node"
	// clusterMarker, in the JetStream dir, says the dir is a cluster
	// node's (a single node's data in it is set aside and imported).
	clusterMarker = "CLUSTER"
	// scaleEvery is how often a node checks that the streams have the
	// replicas the cluster's size calls for.
	scaleEvery = 2 * time.Second
	// statusBudget bounds the streams' infos of one Status.
	statusBudget = 3 * time.Second
	// quorumLogEvery is how often a node waiting for the cluster says so.
	quorumLogEvery = 10 * time.Second
)

// NewConn opens another in-process connection to the embedded server,
// named name. In a cluster it reaches every node's subscribers through
// the routes: the relay's node-to-node trunks travel on one of their own,
// so that a big download does not sit in the store's connection, ahead of
// its requests (its write buffer, its in-process pipe, the server's queue
// to it). The store closes it on Close; the caller may close it before.
func (s *Store) NewConn(name string) (*nats.Conn, error) {
	nc, err := s.connect("cua-relay " + s.node + " " + name)
	if err != nil {
		return nil, err
	}
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.closed {
		nc.Close()
		return nil, api.Errorf(api.KindEnv, "relay store: closed")
	}
	s.conns = append(s.conns, nc)
	return nc, nil
}

// connect opens an in-process connection, presenting the client token.
func (s *Store) connect(name string) (*nats.Conn, error) {
	nc, err := nats.Connect("", nats.InProcessServer(s.ns), nats.Name(name), nats.MaxReconnects(-1), nats.Token(s.clientToken))
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "relay store: connect in process: %w", err)
	}
	return nc, nil
}

// Node is this relay node's name (the NATS server name, unique per node
// in a cluster).
func (s *Store) Node() string { return s.node }

// Clustered tells whether the store is one node of a cluster.
func (s *Store) Clustered() bool { return s.cluster != nil }

// GenerateKey makes a mesh key: 32 random bytes, hex, one line (what
// cua-relay cluster key prints).
func GenerateKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ReadKeyFile reads a mesh key file (surrounding white space is not part
// of the key). It must not be readable by others.
func ReadKeyFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, api.Errorf(api.KindIO, "mesh key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, api.Errorf(api.KindInvalidArgument, "mesh key %s: mode %v: others may read it (chmod 600)", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, api.Errorf(api.KindIO, "mesh key: %w", err)
	}
	b = []byte(strings.TrimSpace(string(b)))
	if len(b) < MinKeyLen {
		return nil, api.Errorf(api.KindInvalidArgument, "mesh key %s: %d bytes, want %d or more (cua-relay cluster key makes one)", path, len(b), MinKeyLen)
	}
	return b, nil
}

func (c *ClusterOptions) validate() error {
	switch {
	case c.Name == "":
		return api.Errorf(api.KindInvalidArgument, "relay cluster: no name")
	case len(c.Key) < MinKeyLen:
		return api.Errorf(api.KindInvalidArgument, "relay cluster: the mesh key is %d bytes, want %d or more", len(c.Key), MinKeyLen)
	}
	if _, _, err := splitHostPort(c.Listen); err != nil {
		return err
	}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats" || u.Host == "" || u.User != nil {
			return api.Errorf(api.KindInvalidArgument, "relay cluster: route %q: want nats://HOST:PORT", r)
		}
	}
	return nil
}

func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port <= 0 || port > 65535 {
		return "", 0, api.Errorf(api.KindInvalidArgument, "relay cluster: listen %q: want HOST:PORT", hp)
	}
	return host, port, nil
}

// routePassword is what routes present: derived from the mesh key, so the
// key itself never crosses the wire and a leaked route password is not
// the key other uses of it (the node-to-node mesh) check. nats-server
// compares it with crypto/subtle (comparePasswords): constant time.
func routePassword(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("cua-relay nats route v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// applyCluster makes opts a cluster node's. nats-server starts its route
// listener only after its client listener (Server.Start waits on the
// client accept loop, which DontListen skips), so a cluster node has one:
// on 127.0.0.1, a random port, not advertised, and refusing every client
// but the store's own in-process one, which presents clientToken (random,
// never written anywhere; nats-server compares it in constant time).
func (c *ClusterOptions) applyCluster(opts *server.Options, clientToken string) error {
	host, port, err := splitHostPort(c.Listen)
	if err != nil {
		return err
	}
	pw := routePassword(c.Key)
	opts.DontListen = false
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.Authorization = clientToken
	opts.Cluster = server.ClusterOpts{
		Name: c.Name, Host: host, Port: port,
		Username: routeUser, Password: pw,
		TLSConfig: c.TLS, NoAdvertise: true,
	}
	if c.TLS != nil {
		opts.Cluster.TLSTimeout = 5
	}
	for _, r := range c.Routes {
		u, _ := url.Parse(r) // validate parsed it
		u.User = url.UserPassword(routeUser, pw)
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// waitJetStream returns once JetStream answers: at once on a single node;
// in a cluster, once a quorum of nodes elected a metadata leader (the
// first node of a new cluster waits here for the second).
func (s *Store) waitJetStream(ctx context.Context) error {
	if s.cluster == nil {
		return nil
	}
	start, said := time.Now(), time.Now()
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := s.js.AccountInfo(actx)
		cancel()
		if err == nil {
			s.log.Info("relay cluster: JetStream ready", "node", s.node, "after", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if time.Since(said) >= quorumLogEvery {
			s.log.Info("relay cluster: waiting for a quorum of nodes", "node", s.node, "routes", s.ns.NumRoutes(), "err", err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return api.Errorf(api.KindEnv, "relay cluster: waiting for a quorum of nodes (routes up: %d): %w", s.ns.NumRoutes(), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// wantReplicas is the replicas the streams should have: one on a single
// node, else as many as the nodes JetStream knows (offline ones too: a
// node down is not a node gone), up to MaxReplicas.
func (s *Store) wantReplicas() int {
	if s.cluster == nil {
		return 1
	}
	jsz, err := s.ns.Jsz(nil)
	if err != nil || jsz.Meta == nil {
		return 1
	}
	return min(max(jsz.Meta.Size, 1), MaxReplicas)
}

// createClusterStreams makes the buckets and the audit stream that are
// not there, and settles every one's config for a cluster (settle). An
// existing stream's other settings are left as they are. bindStreams
// binds them after.
func (s *Store) createClusterStreams(ctx context.Context) error {
	for _, cfg := range bucketConfigs() {
		st, err := s.js.Stream(ctx, "KV_"+cfg.Bucket)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			cfg.Storage, cfg.Replicas = jetstream.FileStorage, s.wantReplicas()
			if _, err = s.js.CreateKeyValue(ctx, cfg); err == nil {
				st, err = s.js.Stream(ctx, "KV_"+cfg.Bucket)
			}
		}
		if err == nil {
			err = s.settle(ctx, st.CachedInfo().Config)
		}
		if err != nil {
			return api.Errorf(api.KindEnv, "relay store: bucket %s: %w", cfg.Bucket, err)
		}
	}
	st, err := s.js.Stream(ctx, StreamAudit)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		cfg := auditConfig()
		cfg.Replicas = s.wantReplicas()
		st, err = s.js.CreateStream(ctx, cfg)
	}
	if err == nil {
		err = s.settle(ctx, st.CachedInfo().Config)
	}
	if err != nil {
		return api.Errorf(api.KindEnv, "relay store: stream %s: %w", StreamAudit, err)
	}
	return nil
}

// settle updates a stream's config for the cluster when it differs:
// replicas raised to wantReplicas (never lowered: fewer nodes known is a
// node gone, which an operator decides), and no direct gets. A bucket's
// direct get is answered by any replica, the followers' possibly behind:
// a node could miss what it just wrote. Without it every read goes to the
// stream's leader (the hot path reads the mirrors anyway).
func (s *Store) settle(ctx context.Context, cfg jetstream.StreamConfig) error {
	want := max(cfg.Replicas, s.wantReplicas())
	if cfg.Replicas == want && !cfg.AllowDirect {
		return nil
	}
	was := cfg.Replicas
	cfg.Replicas, cfg.AllowDirect = want, false
	if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
		return err
	}
	if was != want {
		s.log.Info("relay cluster: stream replicated further", "stream", cfg.Name, "replicas", want, "was", was)
	}
	return nil
}

// streamNames are the store's streams: the buckets' and the audit's.
func streamNames() []string {
	names := []string{StreamAudit}
	for _, b := range buckets {
		names = append(names, "KV_"+b)
	}
	return names
}

// scale raises every stream's replicas to wantReplicas. Only the
// metadata leader does (as makeStreams: one writer of the streams'
// configs at a time).
func (s *Store) scale(ctx context.Context) error {
	if !s.ns.JetStreamIsLeader() {
		return nil
	}
	for _, name := range streamNames() {
		st, err := s.js.Stream(ctx, name)
		if err != nil {
			return err
		}
		if err := s.settle(ctx, st.CachedInfo().Config); err != nil {
			return err
		}
	}
	return nil
}

// keepScaling runs scale until ctx ends: the cluster grows while nodes
// run (a third node joins two).
func (s *Store) keepScaling(ctx context.Context) {
	t := time.NewTicker(scaleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, opTimeout)
		if err := s.scale(sctx); err != nil && ctx.Err() == nil {
			s.log.Debug("relay cluster: replicas not raised yet", "err", err)
		}
		cancel()
	}
}

// markCluster records that dir is a cluster node's JetStream dir.
func markCluster(dir string) error {
	p := filepath.Join(dir, clusterMarker)
	if err := os.WriteFile(p, []byte("this JetStream dir is a cua-relay cluster node's\n"), 0o600); err != nil {
		return api.Errorf(api.KindIO, "relay cluster: %w", err)
	}
	return nil
}

func isClusterDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, clusterMarker))
	return err == nil
}

// Status is this node's view of the cluster and of the streams'
// replication. A stream that does not answer (no quorum, no leader) is
// listed with its error.
func (s *Store) Status(ctx context.Context) (relayapi.Status, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	st := relayapi.Status{Node: s.node}
	if s.cluster != nil {
		st.Cluster = s.cluster.Name
		st.Routes = s.ns.NumRoutes()
		if jsz, err := s.ns.Jsz(nil); err == nil && jsz.Meta != nil {
			st.MetaLeader = jsz.Meta.Leader
			if jsz.Meta.Leader != "" {
				st.Nodes = append(st.Nodes, relayapi.ClusterPeer{Name: jsz.Meta.Leader, Current: true})
			}
			for _, p := range jsz.Meta.Replicas {
				st.Nodes = append(st.Nodes, relayapi.ClusterPeer{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag})
			}
		}
	}
	// One budget for every stream's info: without a quorum no stream
	// answers, and status is what an operator runs then.
	sctx, cancel := context.WithTimeout(ctx, statusBudget)
	defer cancel()
	for _, name := range streamNames() {
		ss := relayapi.StreamStatus{Name: name}
		str, err := s.js.Stream(sctx, name)
		if err != nil {
			ss.Error = err.Error()
			st.Streams = append(st.Streams, ss)
			continue
		}
		info := str.CachedInfo()
		ss.Replicas, ss.Messages = info.Config.Replicas, info.State.Msgs
		if ci := info.Cluster; ci != nil {
			ss.Leader = ci.Leader
			for _, p := range ci.Replicas {
				ss.Peers = append(ss.Peers, relayapi.ClusterPeer{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag})
			}
		}
		st.Streams = append(st.Streams, ss)
	}
	return st, nil
}

// Health is the embedded NATS's state for the node's metrics.
type Health struct {
	Routes int
	// ClusterSize is the JetStream peers known (1 on a single node).
	ClusterSize int
	// MetaLeader: the cluster has a JetStream metadata leader (always on
	// a single node).
	MetaLeader bool
}

// Health answers the embedded NATS's state, without a round trip.
func (s *Store) Health() Health {
	if s.cluster == nil {
		return Health{ClusterSize: 1, MetaLeader: true}
	}
	h := Health{Routes: s.ns.NumRoutes()}
	if jsz, err := s.ns.Jsz(nil); err == nil && jsz.Meta != nil {
		h.ClusterSize, h.MetaLeader = jsz.Meta.Size, jsz.Meta.Leader != ""
	}
	return h
}

// isNoResponders tells a request nobody in the cluster answers.
func isNoResponders(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}
