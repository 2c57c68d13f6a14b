package relayapi

// PathAdminStatus is the node's view of the relay (GET: Status): for
// cua-relay status.
const PathAdminStatus = "/admin/status"

// Status answers GET PathAdminStatus.
type Status struct {
	Node string `json:"node"`
	// Cluster is the cluster's name; "" on a single node (then Nodes,
	// MetaLeader and Routes are empty).
	Cluster string `json:"cluster,omitempty"`
	// MetaLeader is the node that leads JetStream's metadata; "" while
	// the cluster has no quorum.
	MetaLeader string `json:"meta_leader,omitempty"`
	// Nodes are the JetStream peers this node knows, itself included.
	Nodes []ClusterPeer `json:"nodes,omitempty"`
	// Routes counts this node's live routes to the others.
	Routes int `json:"routes"`
	// Streams are the store's buckets (KV_...) and the audit stream.
	Streams []StreamStatus `json:"streams"`
}

// ClusterPeer is one node as JetStream sees it.
type ClusterPeer struct {
	Name string `json:"name"`
	// Current: the node has applied everything its leader has.
	Current bool `json:"current"`
	Offline bool `json:"offline,omitempty"`
	// Lag counts the entries it is behind.
	Lag uint64 `json:"lag,omitempty"`
}

// StreamStatus is one stream's replication.
type StreamStatus struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	// Leader is the node that leads the stream ("" without quorum).
	Leader string `json:"leader,omitempty"`
	// Peers are the stream's other replicas.
	Peers    []ClusterPeer `json:"peers,omitempty"`
	Messages uint64        `json:"messages"`
	// Error says why the stream did not answer (then the rest is empty).
	Error string `json:"error,omitempty"`
}

// PathAdminBackup writes a backup of the whole store (POST Backup ->
// BackupDone): a single node's JetStream dir, written by the relay
// process on its own machine.
const PathAdminBackup = "/admin/backup"

// Backup is the body of POST PathAdminBackup.
type Backup struct {
	// Dir is an absolute path that does not exist yet (or an empty dir).
	Dir string `json:"dir"`
}

// BackupDone answers POST PathAdminBackup.
type BackupDone struct {
	Dir        string `json:"dir"`
	Keys       int    `json:"keys"`
	AuditLines int    `json:"audit_lines"`
}
