package relayd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// The node's view of its cluster, for operators: GET PathAdminStatus on
// the admin socket (cua-relay status) and the NATS series of /metrics.

func (s *Server) adminStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Store.Status(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) adminBackup(w http.ResponseWriter, r *http.Request) {
	var req relayapi.Backup
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	// The relay's working directory is not the caller's: only an
	// absolute path means what the caller meant.
	if !filepath.IsAbs(req.Dir) {
		writeError(w, api.Errorf(api.KindInvalidArgument, "backup dir %q: want an absolute path", req.Dir))
		return
	}
	res, err := s.cfg.Store.Backup(r.Context(), req.Dir)
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("relay backup written", "dir", req.Dir, "keys", res.Keys, "audit_lines", res.AuditLines)
	writeJSON(w, http.StatusOK, relayapi.BackupDone{Dir: req.Dir, Keys: res.Keys, AuditLines: res.AuditLines})
}

// Backup has the running relay write a backup of its store into dir (an
// absolute path, new or empty).
func (c *AdminClient) Backup(ctx context.Context, dir string) (relayapi.BackupDone, error) {
	var d relayapi.BackupDone
	err := c.call(ctx, http.MethodPost, relayapi.PathAdminBackup, relayapi.Backup{Dir: dir}, &d)
	return d, err
}

// Status answers the running relay's view of its cluster and of the
// store's replication.
func (c *AdminClient) Status(ctx context.Context) (relayapi.Status, error) {
	var st relayapi.Status
	err := c.call(ctx, http.MethodGet, relayapi.PathAdminStatus, nil, &st)
	return st, err
}

// writeNATSMetrics writes the embedded NATS's health: routes up, the
// JetStream peers known, and whether the cluster has a metadata leader
// (without one nothing is written: alert on it). A single node has no
// routes, a cluster of one, and always a leader.
func (s *Server) writeNATSMetrics(w io.Writer) {
	h := s.cfg.Store.Health()
	leader := 0
	if h.MetaLeader {
		leader = 1
	}
	fmt.Fprintf(w, "# TYPE cua_relay_nats_routes gauge\ncua_relay_nats_routes %d\n", h.Routes)
	fmt.Fprintf(w, "# TYPE cua_relay_jetstream_cluster_size gauge\ncua_relay_jetstream_cluster_size %d\n", h.ClusterSize)
	fmt.Fprintf(w, "# TYPE cua_relay_jetstream_meta_leader gauge\ncua_relay_jetstream_meta_leader %d\n", leader)
}
