package relayapi

// Admin routes of a node's drain and state.
const (
	// PathAdminDrain drains the node (POST DrainRequest -> DrainReport):
	// go_away to every attached Space, new attaches refused (503
	// going_away with Retry-After), what is in flight proxied for the
	// grace period. The answer comes when the grace period is over or
	// every Space has left.
	PathAdminDrain = "/admin/drain"
	// PathAdminNode is the node's state (GET -> NodeStatus).
	PathAdminNode = "/admin/node"
)

// DrainRequest is the body of POST PathAdminDrain; zero fields take the
// defaults (relayd.DefaultDrainRetryAfter, relayd.DefaultDrainGrace).
type DrainRequest struct {
	// RetryAfterMS is the go_away's reconnect delay, and the Retry-After
	// of the attaches refused from then on.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
	// GraceMS is how long the sessions told to go away may stay to finish
	// what is in flight before the node ends them.
	GraceMS int64 `json:"grace_ms,omitempty"`
}

// DrainReport answers POST PathAdminDrain.
type DrainReport struct {
	Node         string `json:"node"`
	Draining     bool   `json:"draining"`
	RetryAfterMS int64  `json:"retry_after_ms"`
	GraceMS      int64  `json:"grace_ms"`
	// Sessions were attached when the drain began; Left of them ended by
	// themselves within the grace period (their Space moved on), Cut were
	// ended at its end.
	Sessions int `json:"sessions"`
	Left     int `json:"left"`
	Cut      int `json:"cut"`
	// Remaining are the sessions attached when the answer was written
	// (a Space that attached in the moment before the drain began and is
	// told to go away in turn).
	Remaining int   `json:"remaining"`
	TookMS    int64 `json:"took_ms"`
}

// NodeStatus answers GET PathAdminNode.
type NodeStatus struct {
	Node     string   `json:"node"`
	Version  string   `json:"version"`
	URLs     []string `json:"urls"`
	Sessions int      `json:"sessions"`
	// Draining: the node refuses new attaches (a drain ran); it stays so
	// until it is restarted.
	Draining bool `json:"draining"`
	// DrainingSinceMS is when the drain began (Unix ms; 0: not draining).
	DrainingSinceMS int64 `json:"draining_since_ms,omitempty"`
}
