// Package store is cua-relay's state: users, their API tokens, computers,
// the relay's grant key and TURN secret, and the audit, on NATS JetStream.
// The relay embeds nats-server and runs it in process with JetStream on its
// data dir, with no client port: nothing to set up, nothing listening. A cluster
// (cluster.go) is the same nodes with routes between them and the buckets
// replicated; a single node's data grows into one (grow.go).
//
// Every secret is kept only as its protocol.HashToken; a presented token is
// looked up by its hash and compared with protocol.TokenEqual.
package store

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
)

// Buckets and streams. Names are part of the data dir's format: never
// rename one (a relay upgraded in place must find its state).
const (
	bucketUsers     = "relay_users"      // user id -> userRecord
	bucketUserNames = "relay_user_names" // user name -> user id (Create makes names unique)
	bucketTokens    = "relay_tokens"     // hex(HashToken) -> tokenRecord (user and computer tokens)
	bucketRetired   = "relay_retired"    // hex(HashToken) -> retiredRecord (revoked or rotated; expires)
	bucketComputers = "relay_computers"  // computer name -> computerRecord
	bucketMeta      = "relay_meta"       // keyGrantKey -> the grant key's seed; keyTURNSecret -> the TURN secret
	bucketTeams     = "relay_teams"      // team id -> teamRecord
	bucketUserTeams = "relay_user_teams" // user id -> team id (Create: a user is in at most one team)
	bucketShares    = "relay_shares"     // computer name -> shareRecord

	keyGrantKey   = "grant_key"
	keyTURNSecret = "turn_secret"

	// TURNSecretLen is the TURN secret's length (the HMAC key of TURN
	// credentials).
	TURNSecretLen = 32

	// StreamAudit holds the audit lines, on subject auditSubject.
	StreamAudit  = "RELAY_AUDIT"
	auditSubject = "relay.audit"

	// JetStreamDir is where the data dir keeps JetStream's files.
	JetStreamDir = "jetstream"
)

// Retention.
const (
	// RetiredTTL is how long a revoked or rotated token is remembered as
	// such (so a Space using it hears token_revoked or token_rotated, not
	// token_invalid); after it, the token is merely unknown.
	RetiredTTL = 30 * 24 * time.Hour
	// AuditMaxAge and AuditMaxBytes bound the audit stream.
	AuditMaxAge   = 90 * 24 * time.Hour
	AuditMaxBytes = 256 << 20
	// startTimeout bounds the embedded server's start.
	startTimeout = 30 * time.Second
	// opTimeout bounds one store operation when the caller's context has
	// no deadline: an in-process JetStream answers in milliseconds, and a
	// stuck one must not hold a request forever.
	opTimeout = 10 * time.Second
)

// Options tune Open; the zero value is a single node.
type Options struct {
	// Node names this relay node (the NATS server name); default: the host name.
	Node string
	// Now is the clock of created_ms and audit times; default time.Now.
	Now func() time.Time
	// Cluster makes this node one of a cluster (nil: a single node).
	Cluster *ClusterOptions
}

// Store is the relay's state. Its methods are safe for concurrent use.
type Store struct {
	ns   *server.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	log  *slog.Logger
	now  func() time.Time
	node string

	users, userNames, tokens, retired, computers, meta jetstream.KeyValue
	teams, userTeams, shares                           jetstream.KeyValue
	audit                                              jetstream.Stream

	// Mirrors of the buckets every relayed request reads (mirror.go).
	tokenMirror, userMirror, computerMirror *mirror

	grantKey   ed25519.PrivateKey
	turnSecret []byte

	cluster     *ClusterOptions // nil: a single node
	clientToken string          // what in-process connections present (cluster.go)
	connsMu     sync.Mutex
	conns       []*nats.Conn // NewConn's, closed with the store
	closed      bool
	setupUntil  time.Time // a cluster node's setup ends by then (setup.go)
	stopScaling context.CancelFunc
	scaling     sync.WaitGroup
}

// buckets are every bucket's name (bucketConfigs' order).
var buckets = []string{bucketUsers, bucketUserNames, bucketTokens, bucketRetired, bucketComputers, bucketMeta, bucketTeams, bucketUserTeams, bucketShares}

// Open starts the embedded nats-server with JetStream on dataDir/jetstream
// (no listener: the relay talks to it in process), makes the buckets and
// the audit stream if they are not there, and loads (or makes, once) the
// relay's grant key.
//
// With o.Cluster the server is one node of a cluster (cluster.go): Open
// waits for a quorum of nodes, and a single node's data found in dataDir
// is brought into the cluster (grow.go).
func Open(ctx context.Context, dataDir string, log *slog.Logger, o Options) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if dataDir == "" {
		return nil, api.Errorf(api.KindInvalidArgument, "relay store: no data dir")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Node == "" {
		o.Node, _ = os.Hostname()
		if o.Node == "" {
			o.Node = "relay"
		}
	}
	if o.Cluster != nil {
		if err := o.Cluster.validate(); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(dataDir, JetStreamDir)
	single, err := setAsideSingle(dataDir, o.Cluster != nil, log)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, api.Errorf(api.KindIO, "relay store: make %s: %w", dir, err)
	}
	clientToken := ""
	if o.Cluster != nil {
		clientToken = GenerateKey()
	}
	ns, err := startServer(dir, o.Node, o.Cluster, clientToken, log)
	if err != nil {
		return nil, err
	}
	if o.Cluster != nil {
		if err := markCluster(dir); err != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, err
		}
	}
	s := &Store{ns: ns, log: log, now: o.Now, node: o.Node, cluster: o.Cluster, clientToken: clientToken}
	if err := s.open(ctx, single); err != nil {
		s.Close()
		return nil, err
	}
	if o.Cluster != nil {
		sctx, cancel := context.WithCancel(context.Background())
		s.stopScaling = cancel
		s.scaling.Add(1)
		go func() {
			defer s.scaling.Done()
			s.keepScaling(sctx)
		}()
	}
	return s, nil
}

// startServer starts nats-server on the JetStream dir dir: with no
// listener at all on a single node (cluster nil), with routes in a
// cluster.
func startServer(dir, node string, cluster *ClusterOptions, clientToken string, log *slog.Logger) (*server.Server, error) {
	opts := &server.Options{
		ServerName:             node,
		DontListen:             true,
		JetStream:              true,
		StoreDir:               dir,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
		// Memory storage is not used: keep JetStream from reserving RAM for it.
		JetStreamMaxMemory: 1 << 20,
	}
	if cluster != nil {
		if err := cluster.applyCluster(opts, clientToken); err != nil {
			return nil, err
		}
		// nats-server would wait startTimeout on a route port taken:
		// say so at once.
		ln, err := net.Listen("tcp", cluster.Listen)
		if err != nil {
			return nil, api.Errorf(api.KindIO, "relay cluster: listen for routes: %w", err)
		}
		ln.Close()
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "relay store: nats-server: %w", err)
	}
	fatal := make(chan string, 1)
	ns.SetLoggerV2(natsLogger{log: log.With("component", "nats"), fatal: fatal}, false, false, false)
	ns.Start()
	ready := make(chan bool, 1)
	go func() { ready <- ns.ReadyForConnections(startTimeout) }()
	var ok bool
	select {
	case ok = <-ready:
	case msg := <-fatal:
		// nats-server gives up on a listener it cannot open (a route port
		// taken since our check) but would leave us waiting startTimeout.
		ns.Shutdown()
		ns.WaitForShutdown()
		<-ready
		e := api.Errorf(api.KindIO, "relay store: nats-server: %s", msg)
		if strings.Contains(msg, syscall.EADDRINUSE.Error()) {
			e = e.WithCause(syscall.EADDRINUSE) // nats-server passes the error as text only
		}
		return nil, e
	}
	if !ok {
		ns.Shutdown()
		ns.WaitForShutdown()
		if cluster != nil {
			return nil, api.Errorf(api.KindEnv, "relay store: nats-server did not start within %s (is %s another relay's, or %s taken?)", startTimeout, dir, cluster.Listen)
		}
		return nil, api.Errorf(api.KindEnv, "relay store: nats-server did not start within %s (is %s another relay's?)", startTimeout, dir)
	}
	return ns, nil
}

// bucketConfigs are the buckets, as made on a first start.
func bucketConfigs() []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: bucketUsers, Description: "relay users by id"},
		{Bucket: bucketUserNames, Description: "relay user ids by name"},
		{Bucket: bucketTokens, Description: "token hashes: user and computer tokens"},
		{Bucket: bucketRetired, Description: "revoked and rotated token hashes", TTL: RetiredTTL},
		{Bucket: bucketComputers, Description: "computers by name"},
		{Bucket: bucketMeta, Description: "the relay's own keys"},
		{Bucket: bucketTeams, Description: "teams by id"},
		{Bucket: bucketUserTeams, Description: "each user's team"},
		{Bucket: bucketShares, Description: "computers' shares"},
	}
}

func (s *Store) open(ctx context.Context, single string) error {
	nc, err := s.connect("cua-relay " + s.node)
	if err != nil {
		return err
	}
	s.nc = nc
	if s.js, err = jetstream.New(nc); err != nil {
		return api.Errorf(api.KindEnv, "relay store: jetstream: %w", err)
	}
	if single != "" {
		// Say so before the wait: a new node of the cluster that asks
		// must wait for this node's secrets instead of making its own.
		sub, err := nc.Subscribe(subjectImportPending, func(m *nats.Msg) { _ = m.Respond([]byte(s.node)) })
		if err != nil {
			return api.Errorf(api.KindEnv, "relay store: %w", err)
		}
		defer sub.Unsubscribe()
	}
	if err := s.waitJetStream(ctx); err != nil {
		return err
	}
	s.setupUntil = time.Now().Add(clusterSetupBudget)
	// From the quorum on, the setup is bounded (setup.go): a start either
	// ends with every node on the same streams and secrets, or fails
	// within clusterSetupBudget saying which step did not get done.
	if err := s.try(ctx, "make the buckets", s.makeStreams); err != nil {
		return err
	}
	if single != "" {
		if err := s.importSingle(ctx, single); err != nil {
			return err
		}
		s.setupUntil = time.Now().Add(clusterSetupBudget) // the import took its own time
	}
	for _, m := range []struct {
		to **mirror
		kv jetstream.KeyValue
	}{{&s.tokenMirror, s.tokens}, {&s.userMirror, s.users}, {&s.computerMirror, s.computers}} {
		// Each try reads the whole bucket: opTimeout, as a single node's.
		err := s.tryEach(ctx, "follow "+m.kv.Bucket(), opTimeout, func(ctx context.Context) error {
			var err error
			*m.to, err = newMirror(ctx, m.kv)
			return err
		})
		if err != nil {
			return err
		}
	}
	seed, err := s.loadSecret(ctx, keyGrantKey, "the grant key", ed25519.SeedSize)
	if err != nil {
		return err
	}
	s.grantKey = ed25519.NewKeyFromSeed(seed)
	// The TURN secret is made with the store, whether or not this node
	// runs TURN: every node of a relay must check the same credentials.
	s.turnSecret, err = s.loadSecret(ctx, keyTURNSecret, "the TURN secret", TURNSecretLen)
	return err
}

// makeStreams makes (or updates) the buckets and the audit stream, with
// the replicas the cluster calls for, never fewer than they have. In a
// cluster only the JetStream metadata leader does: nats-server answers
// only one of several creates of a stream at once (the others wait for
// nothing), so the other nodes wait for the streams to be there. It is
// one try (see try): after a restart the streams elect their leaders one
// by one, in seconds.
func (s *Store) makeStreams(ctx context.Context) error {
	if s.cluster == nil {
		return s.createStreams(ctx)
	}
	// The leader makes and settles them; every node, the leader too,
	// binds them once settled (bindStreams checks it on a fresh info: a
	// handle bound from an info read before the settle would keep direct
	// gets).
	if s.ns.JetStreamIsLeader() {
		if err := s.createClusterStreams(ctx); err != nil {
			return err
		}
	}
	return s.bindStreams(ctx)
}

func (s *Store) createStreams(ctx context.Context) error {
	kvs := s.kvFields()
	for i, cfg := range bucketConfigs() {
		cfg.Storage = jetstream.FileStorage
		kv, err := s.js.CreateOrUpdateKeyValue(ctx, cfg)
		if err != nil {
			return api.Errorf(api.KindEnv, "relay store: bucket %s: %w", cfg.Bucket, err)
		}
		*kvs[i] = kv
	}
	var err error
	s.audit, err = s.js.CreateOrUpdateStream(ctx, auditConfig())
	if err != nil {
		return api.Errorf(api.KindEnv, "relay store: stream %s: %w", StreamAudit, err)
	}
	return nil
}

func auditConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: StreamAudit, Description: "relay audit lines", Subjects: []string{auditSubject},
		Storage: jetstream.FileStorage, MaxAge: AuditMaxAge, MaxBytes: AuditMaxBytes, Discard: jetstream.DiscardOld,
	}
}

// bindStreams finds the buckets and the audit stream the metadata leader
// made, once it has settled them (clusterConfig).
func (s *Store) bindStreams(ctx context.Context) error {
	kvs := s.kvFields()
	for i, b := range buckets {
		st, err := s.js.Stream(ctx, "KV_"+b)
		if err != nil {
			return api.Errorf(api.KindEnv, "relay store: bucket %s: %w", b, err)
		}
		if st.CachedInfo().Config.AllowDirect {
			return api.Errorf(api.KindEnv, "relay store: bucket %s: not settled for a cluster yet", b)
		}
		if *kvs[i], err = s.js.KeyValue(ctx, b); err != nil {
			return api.Errorf(api.KindEnv, "relay store: bucket %s: %w", b, err)
		}
	}
	var err error
	if s.audit, err = s.js.Stream(ctx, StreamAudit); err != nil {
		return api.Errorf(api.KindEnv, "relay store: stream %s: %w", StreamAudit, err)
	}
	return nil
}

// kvFields are the bucket handles, in buckets' order.
func (s *Store) kvFields() []*jetstream.KeyValue {
	return []*jetstream.KeyValue{&s.users, &s.userNames, &s.tokens, &s.retired, &s.computers, &s.meta, &s.teams, &s.userTeams, &s.shares}
}

// GrantKey is the relay's Ed25519 key that signs grants; it survives a
// restart (Spaces pinned its public half).
func (s *Store) GrantKey() ed25519.PrivateKey { return s.grantKey }

// TURNSecret is the HMAC key of the relay's TURN credentials
// (relay/turnsvc): made once, kept in the store, so a restart keeps the
// credentials it minted valid. The caller must not change it.
func (s *Store) TURNSecret() []byte { return s.turnSecret }

// Close ends the connection and stops nats-server, which flushes
// JetStream's files.
func (s *Store) Close() error {
	if s.stopScaling != nil {
		s.stopScaling()
		s.scaling.Wait()
	}
	// The connection first: a watch's stop would ask JetStream to delete
	// its consumer and wait seconds for an answer that the last node of a
	// cluster, without a quorum, never gets. Closed, the connection ends
	// the watches at once; their consumers are ephemeral and go with it.
	s.connsMu.Lock()
	s.closed = true
	for _, c := range s.conns {
		c.Close()
	}
	s.connsMu.Unlock()
	if s.nc != nil {
		s.nc.Close()
	}
	for _, m := range []*mirror{s.tokenMirror, s.userMirror, s.computerMirror} {
		if m != nil {
			m.stop()
		}
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	return nil
}

// opContext bounds ctx by opTimeout unless it has a deadline already.
func opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, opTimeout)
}

// storeErr is the error of a store operation that failed for the store's
// own reasons (not the caller's input).
func storeErr(what string, err error) error {
	return api.Errorf(api.KindEnv, "relay store: %s: %w", what, err)
}

// natsLogger sends nats-server's lines to slog (its notices at Debug: they
// are about the embedded server's start and stop).
type natsLogger struct {
	log *slog.Logger
	// fatal takes the first fatal line (nats-server then stops trying).
	fatal chan<- string
}

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	select {
	case l.fatal <- msg:
	default:
	}
}
func (l natsLogger) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Debugf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Tracef(format string, v ...any) {}
