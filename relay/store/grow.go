package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
)

// Growing from one node to a cluster. A single node's JetStream dir cannot
// simply be reopened clustered: its streams were never assigned by a
// clustered metadata leader, and nats-server deletes such "orphans" once
// the cluster is up. So the first start with a cluster sets the single
// node's dir aside (SingleDir), starts a fresh clustered one, and copies
// every bucket and the audit into the cluster's (replicated) streams from
// a second, private nats-server on the set-aside dir. The copy keeps the
// grant key and TURN secret: a new node that finds no secrets asks the
// cluster whether a node is importing (subjectImportPending) and waits
// for them instead of making its own.

const (
	// SingleDir, in the data dir, is a single node's JetStream dir set
	// aside to be imported into the cluster; once imported it is renamed
	// SingleDir+".imported-<time>" and kept (as a backup) for the operator
	// to delete.
	SingleDir = "jetstream-single"
	// subjectImportPending is answered by a node that has a single node's
	// data to import.
	subjectImportPending = "relay.store.import_pending"
)

// setAsideSingle answers the set-aside dir to import ("" when none). A
// cluster node's dir opened without a cluster is refused: alone it has no
// quorum, and a copy of replicated data opened as a single node would
// fork the relay's state.
func setAsideSingle(dataDir string, clustered bool, log *slog.Logger) (string, error) {
	dir := filepath.Join(dataDir, JetStreamDir)
	single := filepath.Join(dataDir, SingleDir)
	if !clustered {
		if isClusterDir(dir) {
			return "", api.Errorf(api.KindInvalidArgument, "relay store: %s is a cluster node's: start it with its --cluster flags", dir)
		}
		return "", nil
	}
	if !isClusterDir(dir) && !isEmptyDir(dir) {
		if exists(single) {
			return "", api.Errorf(api.KindInvalidArgument, "relay store: both %s and %s hold a single node's data: keep one", dir, single)
		}
		if err := os.Rename(dir, single); err != nil {
			return "", api.Errorf(api.KindIO, "relay store: set a single node's data aside: %w", err)
		}
		log.Warn("relay cluster: a single node's data set aside, to be brought into the cluster once it has a quorum", "dir", single)
	}
	if exists(single) {
		return single, nil
	}
	return "", nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func isEmptyDir(p string) bool {
	es, err := os.ReadDir(p)
	return err != nil || len(es) == 0
}

// importSingle copies the set-aside single node's buckets and audit into
// the cluster's, then renames the dir. Run again after a crash, it
// copies again: puts are idempotent, audit lines carry a message id
// (JetStream drops duplicates within its window).
func (s *Store) importSingle(ctx context.Context, single string) error {
	ns, err := startServer(single, s.node+"-single", nil, "", s.log)
	if err != nil {
		return err
	}
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		return api.Errorf(api.KindEnv, "relay store: connect to the single node's data: %w", err)
	}
	defer nc.Close()
	old, err := jetstream.New(nc)
	if err != nil {
		return api.Errorf(api.KindEnv, "relay store: jetstream: %w", err)
	}
	// The secrets first: a cluster that made others stops the import
	// before anything else is written.
	if err := s.importSecrets(ctx, old); err != nil {
		return err
	}
	n := 0
	kvs := []jetstream.KeyValue{s.users, s.userNames, s.tokens, s.retired, s.computers, s.teams, s.userTeams, s.shares}
	for _, kv := range kvs {
		c, err := copyBucket(ctx, old, kv)
		if err != nil {
			return err
		}
		n += c
	}
	lines, err := copyAudit(ctx, old, s.js, "import-"+s.node)
	if err != nil {
		return err
	}
	ns.Shutdown()
	ns.WaitForShutdown()
	done := fmt.Sprintf("%s.imported-%s", single, time.Now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(single, done); err != nil {
		return api.Errorf(api.KindIO, "relay store: the single node's data was imported, but: %w", err)
	}
	s.log.Warn("relay cluster: a single node's data imported into the cluster; the old dir is kept as a backup", "keys", n, "audit_lines", lines, "kept", done)
	return nil
}

func (s *Store) importSecrets(ctx context.Context, old jetstream.JetStream) error {
	meta, err := old.KeyValue(ctx, bucketMeta)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		// Not a single node's data (a cluster node's copy: its streams
		// have three replicas, which a single server does not open).
		return api.Errorf(api.KindPreconditionFailed, "relay cluster: the data to import holds no relay keys: it is not a single node's data or a cua-relay backup; nothing imported")
	}
	if err != nil {
		return storeErr("read the single node's keys", err)
	}
	for _, key := range []string{keyGrantKey, keyTURNSecret} {
		e, err := meta.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return storeErr("read the single node's "+key, err)
		}
		if _, err := s.meta.Create(ctx, key, e.Value()); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return storeErr("import "+key, err)
		}
		cur, err := s.meta.Get(ctx, key)
		if err != nil {
			return storeErr("read "+key, err)
		}
		if !bytes.Equal(cur.Value(), e.Value()) {
			return api.Errorf(api.KindPreconditionFailed, "relay cluster: the cluster already has another %s (its nodes started before this one, which holds a single node's data): nothing imported; start this node first, with the new nodes' data dirs empty", key)
		}
	}
	return nil
}

// copyBucket puts every key of the single node's bucket named as to's
// into to; it answers how many.
func copyBucket(ctx context.Context, old jetstream.JetStream, to jetstream.KeyValue) (int, error) {
	from, err := old.KeyValue(ctx, to.Bucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, storeErr("read the single node's "+to.Bucket(), err)
	}
	w, err := from.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return 0, storeErr("read the single node's "+to.Bucket(), err)
	}
	defer w.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, storeErr("import "+to.Bucket(), ctx.Err())
		case e := <-w.Updates():
			if e == nil { // every key delivered
				return n, nil
			}
			if _, err := to.Put(ctx, e.Key(), e.Value()); err != nil {
				return n, storeErr("import "+to.Bucket(), err)
			}
			n++
		}
	}
}

// copyAudit appends the audit lines of from's stream to to's; each
// carries a message id (idPrefix-seq), so a copy run twice within
// JetStream's duplicate window adds each line once.
func copyAudit(ctx context.Context, from, to jetstream.JetStream, idPrefix string) (int, error) {
	st, err := from.Stream(ctx, StreamAudit)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, storeErr("read the audit to copy", err)
	}
	state := st.CachedInfo().State
	n := 0
	for seq := state.FirstSeq; seq <= state.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return n, storeErr("read the audit to copy", err)
		}
		id := fmt.Sprintf("%s-%d", idPrefix, seq)
		if _, err := to.Publish(ctx, auditSubject, m.Data, jetstream.WithMsgID(id)); err != nil {
			return n, storeErr("copy the audit", err)
		}
		n++
	}
	return n, nil
}

// importPending answers whether a node of the cluster is bringing a
// single node's data in (it answers subjectImportPending), and which.
func (s *Store) importPending(ctx context.Context) (string, bool, error) {
	m, err := s.nc.RequestWithContext(ctx, subjectImportPending, nil)
	if isNoResponders(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(m.Data), true, nil
}
