// Package store is cua-relay's state: users, their API tokens, computers,
// the relay's grant key and TURN secret, and the audit, on NATS JetStream.
// The relay embeds nats-server and runs it in process with JetStream on its
// data dir, with no client port: nothing to set up, nothing listening. A cluster (a later
// issue) is the same nodes with routes between them and the buckets
// replicated; nothing here assumes one node beyond the Options.
//
// Every secret is kept only as its protocol.HashToken; a presented token is
// looked up by its hash and compared with protocol.TokenEqual.
package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
}

// Open starts the embedded nats-server with JetStream on dataDir/jetstream
// (no listener: the relay talks to it in process), makes the buckets and
// the audit stream if they are not there, and loads (or makes, once) the
// relay's grant key.
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
	dir := filepath.Join(dataDir, JetStreamDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, api.Errorf(api.KindIO, "relay store: make %s: %w", dir, err)
	}
	ns, err := server.NewServer(&server.Options{
		ServerName:             o.Node,
		DontListen:             true,
		JetStream:              true,
		StoreDir:               dir,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
		// Memory storage is not used: keep JetStream from reserving RAM for it.
		JetStreamMaxMemory: 1 << 20,
	})
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "relay store: nats-server: %w", err)
	}
	ns.SetLoggerV2(natsLogger{log.With("component", "nats")}, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(startTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, api.Errorf(api.KindEnv, "relay store: nats-server did not start within %s (is %s another relay's?)", startTimeout, dir)
	}
	s := &Store{ns: ns, log: log, now: o.Now, node: o.Node}
	if err := s.open(ctx, o.Node); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, node string) error {
	nc, err := nats.Connect("", nats.InProcessServer(s.ns), nats.Name("cua-relay "+node), nats.MaxReconnects(-1))
	if err != nil {
		return api.Errorf(api.KindEnv, "relay store: connect in process: %w", err)
	}
	s.nc = nc
	if s.js, err = jetstream.New(nc); err != nil {
		return api.Errorf(api.KindEnv, "relay store: jetstream: %w", err)
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	for _, b := range []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&s.users, jetstream.KeyValueConfig{Bucket: bucketUsers, Description: "relay users by id"}},
		{&s.userNames, jetstream.KeyValueConfig{Bucket: bucketUserNames, Description: "relay user ids by name"}},
		{&s.tokens, jetstream.KeyValueConfig{Bucket: bucketTokens, Description: "token hashes: user and computer tokens"}},
		{&s.retired, jetstream.KeyValueConfig{Bucket: bucketRetired, Description: "revoked and rotated token hashes", TTL: RetiredTTL}},
		{&s.computers, jetstream.KeyValueConfig{Bucket: bucketComputers, Description: "computers by name"}},
		{&s.meta, jetstream.KeyValueConfig{Bucket: bucketMeta, Description: "the relay's own keys"}},
		{&s.teams, jetstream.KeyValueConfig{Bucket: bucketTeams, Description: "teams by id"}},
		{&s.userTeams, jetstream.KeyValueConfig{Bucket: bucketUserTeams, Description: "each user's team"}},
		{&s.shares, jetstream.KeyValueConfig{Bucket: bucketShares, Description: "computers' shares"}},
	} {
		b.cfg.Storage = jetstream.FileStorage
		kv, err := s.js.CreateOrUpdateKeyValue(ctx, b.cfg)
		if err != nil {
			return api.Errorf(api.KindEnv, "relay store: bucket %s: %w", b.cfg.Bucket, err)
		}
		*b.kv = kv
	}
	s.audit, err = s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: StreamAudit, Description: "relay audit lines", Subjects: []string{auditSubject},
		Storage: jetstream.FileStorage, MaxAge: AuditMaxAge, MaxBytes: AuditMaxBytes, Discard: jetstream.DiscardOld,
	})
	if err != nil {
		return api.Errorf(api.KindEnv, "relay store: stream %s: %w", StreamAudit, err)
	}
	for _, m := range []struct {
		to **mirror
		kv jetstream.KeyValue
	}{{&s.tokenMirror, s.tokens}, {&s.userMirror, s.users}, {&s.computerMirror, s.computers}} {
		if *m.to, err = newMirror(ctx, m.kv); err != nil {
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

// loadSecret reads the random value of key in the meta bucket, or makes it
// on the first start. Create (not Put) makes the first writer win: two
// nodes starting at once end up with one value (one grant key, which every
// Space pins; one TURN secret, which every node checks credentials with).
func (s *Store) loadSecret(ctx context.Context, key, what string, size int) ([]byte, error) {
	e, err := s.meta.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		b := make([]byte, size)
		rand.Read(b)
		if _, err := s.meta.Create(ctx, key, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, api.Errorf(api.KindEnv, "relay store: save %s: %w", what, err)
		}
		e, err = s.meta.Get(ctx, key)
	}
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "relay store: read %s: %w", what, err)
	}
	if len(e.Value()) != size {
		return nil, api.Errorf(api.KindEnv, "relay store: %s is %d bytes, want %d: the data dir is damaged", what, len(e.Value()), size)
	}
	return e.Value(), nil
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
	for _, m := range []*mirror{s.tokenMirror, s.userMirror, s.computerMirror} {
		if m != nil {
			m.stop()
		}
	}
	if s.nc != nil {
		s.nc.Close()
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
type natsLogger struct{ log *slog.Logger }

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l natsLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Tracef(format string, v ...any)  {}
