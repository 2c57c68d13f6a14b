package api

import (
	"strconv"
	"time"
)

// StreamSessions is the answer of GET PathStreamSessions: every live
// viewer of the Space (never null), oldest first.
type StreamSessions struct {
	Sessions []StreamSession `json:"sessions"`
}

// The target of a StreamSession: TargetScreen, or TargetWindowPrefix and
// the window's id.
const (
	TargetScreen       = "screen"
	TargetWindowPrefix = "window:"
)

// StreamTarget names the target of a stream of windowID (0: the screen)
// as StreamSession.Target does.
func StreamTarget(windowID uint32) string {
	if windowID == 0 {
		return TargetScreen
	}
	return TargetWindowPrefix + strconv.FormatUint(uint64(windowID), 10)
}

// StreamSession is one live viewer: its session (the id of its Location,
// which a DELETE ends), its target, and the path its media took. The
// ticket that opened it is never named.
type StreamSession struct {
	ID string `json:"id"`
	// Target is TargetScreen or "window:<id>" (StreamTarget).
	Target   string `json:"target"`
	WindowID uint32 `json:"window_id,omitempty"`
	ViewOnly bool   `json:"view_only"`
	// ByTicket: the viewer came with a stream ticket (else the token).
	ByTicket bool `json:"by_ticket"`
	// Connected: its ICE and DTLS connected, and Path is known; a viewer
	// not connected yet is ended after StreamConnectTimeout.
	Connected bool `json:"connected"`
	// Path is the media's latest path (MediaDirect or MediaTURN, with the
	// candidate pair), as the viewer's "path" control message says it.
	Path      *StreamPath `json:"path,omitempty"`
	StartedAt time.Time   `json:"started_at"`
	// Name and Role say who watches (PresenceViewer's).
	Name string `json:"name"`
	Role string `json:"role,omitempty"`
	// Startup is how its first frame came.
	Startup *StreamStartup `json:"startup,omitempty"`
}

// Ways a viewer's first keyframe came (StreamStartup.Keyframe).
const (
	// KeyframeReady: encoded while the viewer's ICE and DTLS ran, and
	// sent the moment it connected.
	KeyframeReady = "ready"
	// KeyframeEncoded: encoded for the viewer once it connected (the
	// stream was running for others, whose frames came after the last
	// keyframe).
	KeyframeEncoded = "encoded"
)

// StreamStartup is how a viewer's first frame came: each step's time
// since its offer reached the daemon's stream engine, in milliseconds
// (absent: not reached yet). The step that dominates is where a slow
// start's time went.
type StreamStartup struct {
	// AnswerMS: the SDP answer made, its candidates gathered.
	AnswerMS float64 `json:"answer_ms"`
	// ICEMS: ICE connected (a candidate pair works).
	ICEMS float64 `json:"ice_ms,omitempty"`
	// ConnectedMS: DTLS connected, SRTP keyed: media may flow.
	ConnectedMS float64 `json:"connected_ms,omitempty"`
	// FirstFrameMS: its first keyframe handed to the network.
	FirstFrameMS float64 `json:"first_frame_ms,omitempty"`
	// Keyframe is KeyframeReady or KeyframeEncoded, with the keyframe's
	// encode time; CaptureMS and KeyframeReadyMS are set when the viewer
	// started its stream: the first capture of the target came, and its
	// keyframe was encoded.
	Keyframe         string  `json:"keyframe,omitempty"`
	KeyframeEncodeMS float64 `json:"keyframe_encode_ms,omitempty"`
	CaptureMS        float64 `json:"capture_ms,omitempty"`
	KeyframeReadyMS  float64 `json:"keyframe_ready_ms,omitempty"`
}
