package api

import "time"

// The daemon's own routes, whatever its services: GET PathHealth names the
// daemon without auth, GET PathCapabilities answers Capabilities, GET
// PathMetrics the Prometheus metrics.
const (
	PathHealth       = "/health"
	PathCapabilities = "/v1/capabilities"
	PathMetrics      = "/metrics"
)

// Feature is a guest capability a client can ask about before calling.
type Feature string

// Every feature cua-spacesd reports, in the order the capabilities call lists them.
const (
	FeatureShell         Feature = "shell"
	FeaturePTY           Feature = "pty"
	FeatureFiles         Feature = "files"
	FeatureFSWatch       Feature = "fs_watch"
	FeatureWindows       Feature = "windows"
	FeatureScreenshot    Feature = "screenshot"
	FeatureInput         Feature = "input"
	FeatureClipboardText Feature = "clipboard.text"
	FeatureLaunchApp     Feature = "launch_app"
	FeatureDesktopStream Feature = "desktop_stream"
	FeatureWindowStream  Feature = "window_stream"
	FeatureRelayAttach   Feature = "relay_attach"
	FeatureMCP           Feature = "mcp"
	// FeatureDesktopAudio is the desktop's sound as Opus on a stream
	// (QueryAudio): a sound server in the guest and a build with Opus.
	FeatureDesktopAudio Feature = "desktop_audio"
	// FeatureA11y is the accessibility tree of the windows (AT-SPI2 on
	// Linux): an accessibility bus in the desktop session.
	FeatureA11y Feature = "a11y"
)

// AllFeatures lists every feature name of the contract.
var AllFeatures = []Feature{
	FeatureShell, FeaturePTY, FeatureFiles, FeatureFSWatch, FeatureWindows,
	FeatureScreenshot, FeatureInput, FeatureClipboardText, FeatureLaunchApp,
	FeatureDesktopStream, FeatureWindowStream, FeatureRelayAttach, FeatureMCP, FeatureDesktopAudio, FeatureA11y,
}

// DaemonName is what GET /health answers in "daemon"; a client uses it to
// tell a spacesd from any other HTTP server.
const DaemonName = "cua-spacesd"

// ProtocolVersion is bumped on an incompatible change of this contract.
const ProtocolVersion = 1

// DefaultPort is the port cua-spacesd listens on unless told otherwise.
const DefaultPort = 3211

// Health is the unauthenticated identity answer of GET /health.
type Health struct {
	Daemon   string `json:"daemon"`
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	Status   string `json:"status"`
}

// FeatureStatus says whether one feature works on this guest and, if not, why.
type FeatureStatus struct {
	Supported bool `json:"supported"`
	// Limitation is one sentence a person can act on, set when unsupported.
	Limitation string `json:"limitation,omitempty"`
}

// Limits are the bounds the daemon enforces, so a client can stay inside them.
type Limits struct {
	MaxExecOutputBytes   int64 `json:"max_exec_output_bytes"`
	ProcessRingBytes     int64 `json:"process_ring_bytes"`
	MaxProcesses         int   `json:"max_processes"`
	ExitRetentionSeconds int   `json:"exit_retention_seconds"`
	// ProcessContainment says how each process tree is held: "cgroup2",
	// "hybrid" (cgroup2 with v1 controllers) or "cgroup1" (a cgroup of its
	// own, killed whole), or "off" (a process group, which setsid leaves).
	ProcessContainment string `json:"process_containment"`
	// ProcessContainmentNote says why containment is off, or what it lacks.
	ProcessContainmentNote string `json:"process_containment_note,omitempty"`
	// ProcessPidsMax and ProcessMemoryMaxBytes bound each process tree
	// (tasks, bytes); ChildrenPidsMax and ChildrenMemoryMaxBytes all trees
	// together. 0 means not enforced.
	ProcessPidsMax         int64 `json:"process_pids_max"`
	ProcessMemoryMaxBytes  int64 `json:"process_memory_max_bytes"`
	ChildrenPidsMax        int64 `json:"children_pids_max"`
	ChildrenMemoryMaxBytes int64 `json:"children_memory_max_bytes"`
	MaxJSONBodyBytes       int64 `json:"max_json_body_bytes"`
	UploadChunkBytes       int64 `json:"upload_chunk_bytes"`
	// The desktop's bounds: clicks in one click call, wheel clicks per
	// axis in one scroll, the largest max_dimension of a screenshot,
	// characters (Unicode code points) in one type call, bytes of
	// clipboard text. A call past one answers invalid_argument naming it.
	MaxClickCount          int `json:"max_click_count"`
	MaxScrollClicks        int `json:"max_scroll_clicks"`
	MaxScreenshotDimension int `json:"max_screenshot_dimension"`
	MaxTypeChars           int `json:"max_type_chars"`
	MaxClipboardBytes      int `json:"max_clipboard_bytes"`
	// The streams' bounds: viewers of all streams at once (one of them
	// kept for the token), viewers opened with one ticket (and its
	// renewals) at once, the time a viewer has to connect after its
	// answer, the longest ticket, the highest max_fps.
	MaxStreamViewers            int `json:"max_stream_viewers"`
	MaxStreamViewersPerTicket   int `json:"max_stream_viewers_per_ticket"`
	StreamConnectTimeoutSeconds int `json:"stream_connect_timeout_seconds"`
	MaxTicketTTLSeconds         int `json:"max_ticket_ttl_seconds"`
	MaxStreamFPS                int `json:"max_stream_fps"`
	// Idempotency keys: how many are kept at once, and for how long after
	// their call ended (api.MaxIdempotencyKeys, api.IdempotencyKeyTTL).
	MaxIdempotencyKeys    int `json:"max_idempotency_keys"`
	IdempotencyKeySeconds int `json:"idempotency_key_seconds"`
}

// LimitDoc describes one field of Limits. docs/api.md's table of limits is
// generated from LimitDocs, and a test fails when a field has none.
type LimitDoc struct {
	// Name is the field's JSON name.
	Name string
	// Meaning says what the field bounds, in its unit.
	Meaning string
}

// LimitDocs describes every field of Limits, in the struct's order.
func LimitDocs() []LimitDoc {
	return []LimitDoc{
		{"max_exec_output_bytes", "Bytes of each of stdout and stderr that one exec answers (its max_output_bytes may ask less, never more)."},
		{"process_ring_bytes", "Bytes of output kept per stream of a detached process, for its stream and reconnects."},
		{"max_processes", "Processes running at once: detached ones, execs in flight, and exited ones whose background children live."},
		{"exit_retention_seconds", "How long an exited process's status and output stay readable (at least 600)."},
		{"process_containment", "How each process tree is held: cgroup2, hybrid (cgroup2 with v1 controllers), cgroup1, or off (process groups only)."},
		{"process_containment_note", "Why containment is off, or what it lacks (a controller); absent when nothing is missing."},
		{"process_pids_max", "Tasks (processes and threads) of each process tree; 0 = not enforced."},
		{"process_memory_max_bytes", "Memory of each process tree; 0 = not enforced."},
		{"children_pids_max", "Tasks of all process trees together; 0 = not enforced."},
		{"children_memory_max_bytes", "Memory of all process trees together; 0 = not enforced."},
		{"max_json_body_bytes", "Bytes of a JSON request body."},
		{"upload_chunk_bytes", "Bytes of one upload chunk (PUT /v1/uploads/{id})."},
		{"max_click_count", "Clicks in one click call."},
		{"max_scroll_clicks", "Wheel clicks per axis in one scroll call."},
		{"max_screenshot_dimension", "The largest max_dimension of a screenshot."},
		{"max_type_chars", "Characters (Unicode code points) in one type call."},
		{"max_clipboard_bytes", "Bytes of clipboard text."},
		{"max_stream_viewers", "Stream viewers at once, of every stream; one slot is kept for the token."},
		{"max_stream_viewers_per_ticket", "Viewers one ticket (with its renewals) opens at once."},
		{"stream_connect_timeout_seconds", "Seconds a viewer has to connect after its answer before its slot is freed."},
		{"max_ticket_ttl_seconds", "The longest lifetime of a stream ticket."},
		{"max_stream_fps", "The highest max_fps a viewer may ask."},
		{"max_idempotency_keys", "Idempotency keys kept at once (the oldest finished is forgotten first)."},
		{"idempotency_key_seconds", "How long a key is kept after its call ended."},
	}
}

// Capabilities is the answer of GET /v1/capabilities.
type Capabilities struct {
	Daemon          string                    `json:"daemon"`
	Version         string                    `json:"version"`
	ProtocolVersion int                       `json:"protocol_version"`
	OS              string                    `json:"os"`
	Arch            string                    `json:"arch"`
	Hostname        string                    `json:"hostname"`
	DisplayServer   string                    `json:"display_server"` // "x11", "quartz" or "none"
	Display         string                    `json:"display,omitempty"`
	Limits          Limits                    `json:"limits"`
	Features        map[Feature]FeatureStatus `json:"features"`
	// Relay is the state of relay_attach: the relay the Space dials, and
	// whether it is attached now; nil when it was never told to attach.
	Relay *RelayStatus `json:"relay,omitempty"`
}

// Supports reports whether f is supported, and the limitation when it is not.
func (c *Capabilities) Supports(f Feature) (bool, string) {
	st, ok := c.Features[f]
	if !ok {
		return false, "this spacesd does not know the feature " + string(f)
	}
	return st.Supported, st.Limitation
}

// Require returns a capability_missing error for the first unsupported feature.
func (c *Capabilities) Require(fs ...Feature) error {
	for _, f := range fs {
		if ok, lim := c.Supports(f); !ok {
			return CapabilityMissing(f, lim)
		}
	}
	return nil
}

// The keep-alive of every WebSocket stream (process output, file watch): a
// side that hears nothing from the other for StreamIdleTimeout (no message,
// no ping, no pong) drops the stream; each side pings every
// StreamPingInterval, so a healthy idle stream never comes near it.
const (
	StreamPingInterval = 30 * time.Second
	StreamIdleTimeout  = 75 * time.Second
	// StreamMaxMessageBytes bounds one message in either direction (stdin
	// and output chunks travel as base64 inside JSON).
	StreamMaxMessageBytes = 1 << 20
)
