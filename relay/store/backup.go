package store

import (
	"context"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
)

// BackupResult says what a backup holds.
type BackupResult struct {
	Keys       int `json:"keys"`
	AuditLines int `json:"audit_lines"`
}

// Backup copies the whole store (every bucket, the relay's keys included,
// and the audit) into dir, a new directory, as a single node's JetStream
// dir: a second, private nats-server writes it, while this node serves.
// Restored as a single node's DATA_DIR/jetstream, it is that relay; as a
// new cluster's first node's DATA_DIR/jetstream-single, it grows into the
// cluster (grow.go). A copy of a cluster node's own files is no backup: its
// replicated streams open only in their cluster.
func (s *Store) Backup(ctx context.Context, dir string) (BackupResult, error) {
	var res BackupResult
	if !isEmptyDir(dir) {
		return res, api.Errorf(api.KindInvalidArgument, "relay backup: %s exists and is not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, api.Errorf(api.KindIO, "relay backup: %w", err)
	}
	ns, err := startServer(dir, s.node+"-backup", nil, "", s.log)
	if err != nil {
		return res, err
	}
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		return res, api.Errorf(api.KindEnv, "relay backup: %w", err)
	}
	defer nc.Close()
	to, err := jetstream.New(nc)
	if err != nil {
		return res, api.Errorf(api.KindEnv, "relay backup: %w", err)
	}
	for _, cfg := range bucketConfigs() {
		cfg.Storage = jetstream.FileStorage
		kv, err := to.CreateKeyValue(ctx, cfg)
		if err != nil {
			return res, storeErr("backup: bucket "+cfg.Bucket, err)
		}
		n, err := copyBucket(ctx, s.js, kv)
		if err != nil {
			return res, err
		}
		res.Keys += n
	}
	if _, err := to.CreateStream(ctx, auditConfig()); err != nil {
		return res, storeErr("backup: the audit", err)
	}
	if res.AuditLines, err = copyAudit(ctx, s.js, to, "backup"); err != nil {
		return res, err
	}
	return res, nil
}
