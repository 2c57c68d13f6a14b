package protocol

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// Protocol versions. Hello names the range a Space speaks; the relay
// answers the highest version both speak (Negotiate), or ends the session
// with CloseUnsupportedVersion. A change a peer of the previous version
// would misread (a new frame type it must act on, a field's meaning) gets
// a new Version; the range lets a relay speak to Spaces of both for a time.
const (
	// Version is the newest version this package speaks.
	Version = 1
	// MinVersion is the oldest version this package still speaks.
	MinVersion = 1
)

// Heartbeat and go-away limits.
const (
	// DefaultHeartbeat is the interval a relay names in Welcome unless it
	// is configured otherwise (DESIGN §4: 15 s, like yamux's keepalive).
	DefaultHeartbeat = 15 * time.Second
	// MinHeartbeat and MaxHeartbeat bound Welcome.Heartbeat.
	MinHeartbeat = 1 * time.Second
	MaxHeartbeat = 5 * time.Minute
	// MissedHeartbeats is how many intervals without any frame from the
	// peer end a session (CloseHeartbeatTimeout).
	MissedHeartbeats = 3
	// MaxRetryAfter bounds GoAway.RetryAfter: a relay cannot park a Space
	// for longer.
	MaxRetryAfter = time.Hour
	// MaxPathLen bounds OpenData.Path.
	MaxPathLen = 1024
)

// KickAll in Kick.Person ends the sessions of every person but the owner.
const KickAll = "all"

// Millis is a duration on the wire, in whole milliseconds.
type Millis int64

// Duration is m as a time.Duration.
func (m Millis) Duration() time.Duration { return time.Duration(m) * time.Millisecond }

// MillisOf is d in whole milliseconds (rounded down).
func MillisOf(d time.Duration) Millis { return Millis(d / time.Millisecond) }

// A Message is the content of one control frame. Only this package's
// types are Messages; a session type-switches on what ReadMessage answers.
type Message interface {
	FrameType() FrameType
	// check answers what is wrong with the message, or nil.
	check() error
}

// Hello is the Space's first frame. The computer's token is not in it: it
// went in the WSS upgrade's Authorization header, and the relay checks
// that Computer is the computer that token belongs to.
type Hello struct {
	MinVersion int `json:"min_version"`
	MaxVersion int `json:"max_version"`
	// Computer is the name the Space believes it has, or "" when it
	// knows only its token (a first attach from --relay-token-file).
	Computer      string `json:"computer,omitempty"`
	DaemonVersion string `json:"daemon_version"`
}

// Welcome is the relay's answer to Hello.
type Welcome struct {
	// Version is the version the session speaks from here on.
	Version int `json:"version"`
	// GrantKey is the Ed25519 key that signs this relay's grants. The
	// Space pins it on first attach and refuses a changed one
	// (CloseGrantKeyChanged) until registered again.
	GrantKey ed25519.PublicKey `json:"grant_key"`
	// Heartbeat is how often each side pings.
	Heartbeat Millis `json:"heartbeat_ms"`
	// Node is the relay node's name (for logs; a cluster has several).
	Node string `json:"node"`
	// Computer is the name the relay knows the Space's token by: the
	// computer every grant of the session names. A Space whose Hello
	// named another ends the session (protocol_error).
	Computer string `json:"computer"`
}

// Ping asks the peer for a Pong with the same Nonce. SentAt (Unix ms, the
// sender's clock) lets the sender measure the round trip and, with the
// peer's SentAt, notice a clock far off.
type Ping struct {
	Nonce  uint64 `json:"nonce"`
	SentAt int64  `json:"sent_ms"`
}

// Pong answers a Ping: the same Nonce, the Ping's SentAt.
type Pong struct {
	Nonce  uint64 `json:"nonce"`
	SentAt int64  `json:"sent_ms"`
}

// GoAway asks the Space to end its session and dial again after
// RetryAfter (no sooner, whatever its backoff says).
type GoAway struct {
	Reason     CloseCode `json:"reason"`
	Message    string    `json:"message,omitempty"`
	RetryAfter Millis    `json:"retry_after_ms"`
}

// OpenData asks the Space for a bulk data connection: it dials
// wss://<the relay it is attached to><Path> with "Authorization: Bearer
// <Token>"; the relay then writes a stream Header on it as on any relayed
// stream. Token is one-time (TokenData) and never logged (LogValue).
type OpenData struct {
	Token string `json:"token"`
	Path  string `json:"path"`
}

// Kick ends the sessions and streams of Person, or of every non-owner
// when Person is KickAll, at once (unshare must bite within 500 ms).
type Kick struct {
	Person  string    `json:"person"`
	Reason  CloseCode `json:"reason"`
	Message string    `json:"message,omitempty"`
}

// Close is the last frame of a session, from either side: why it ends.
type Close struct {
	Code    CloseCode `json:"code"`
	Message string    `json:"message,omitempty"`
}

func (Hello) FrameType() FrameType    { return FrameHello }
func (Welcome) FrameType() FrameType  { return FrameWelcome }
func (Ping) FrameType() FrameType     { return FramePing }
func (Pong) FrameType() FrameType     { return FramePong }
func (GoAway) FrameType() FrameType   { return FrameGoAway }
func (OpenData) FrameType() FrameType { return FrameOpenData }
func (Kick) FrameType() FrameType     { return FrameKick }
func (Close) FrameType() FrameType    { return FrameClose }

func checkVersion(field string, v int) error {
	if v < 1 || v > 255 {
		return fmt.Errorf("%s %d: want 1 to 255", field, v)
	}
	return nil
}

func (m Hello) check() error {
	if err := checkVersion("min_version", m.MinVersion); err != nil {
		return err
	}
	if err := checkVersion("max_version", m.MaxVersion); err != nil {
		return err
	}
	if m.MinVersion > m.MaxVersion {
		return fmt.Errorf("min_version %d is above max_version %d", m.MinVersion, m.MaxVersion)
	}
	if m.Computer != "" {
		if err := CheckComputerName(m.Computer); err != nil {
			return err
		}
	}
	return checkText("daemon_version", m.DaemonVersion, true)
}

// Accepts reports whether v is in the range h names (the Space's check of
// Welcome.Version).
func (h Hello) Accepts(v int) bool { return v >= h.MinVersion && v <= h.MaxVersion }

// Negotiate is the relay's choice of version for h: the highest that both
// h and this package speak. None is invalid_argument with reason
// unsupported_version (CloseCodeFor), naming both ranges.
func Negotiate(h Hello) (int, error) {
	v := min(h.MaxVersion, Version)
	if v < max(h.MinVersion, MinVersion) {
		return 0, closeError(CloseUnsupportedVersion, api.KindInvalidArgument,
			"protocol version: the Space speaks %d to %d, this relay %d to %d; upgrade the older one",
			h.MinVersion, h.MaxVersion, MinVersion, Version)
	}
	return v, nil
}

// NewHello is the Hello of this package's version range.
func NewHello(computer, daemonVersion string) Hello {
	return Hello{MinVersion: MinVersion, MaxVersion: Version, Computer: computer, DaemonVersion: daemonVersion}
}

func (m Welcome) check() error {
	if err := checkVersion("version", m.Version); err != nil {
		return err
	}
	if len(m.GrantKey) != ed25519.PublicKeySize {
		return fmt.Errorf("grant_key: %d bytes, want %d", len(m.GrantKey), ed25519.PublicKeySize)
	}
	if d := m.Heartbeat.Duration(); d < MinHeartbeat || d > MaxHeartbeat {
		return fmt.Errorf("heartbeat_ms %d: want %d to %d", m.Heartbeat, MillisOf(MinHeartbeat), MillisOf(MaxHeartbeat))
	}
	if err := checkText("node", m.Node, true); err != nil {
		return err
	}
	return CheckComputerName(m.Computer)
}

func (m Ping) check() error { return nil }
func (m Pong) check() error { return nil }

func checkReason(c CloseCode) error {
	if c < 4000 || c > 4999 {
		return fmt.Errorf("close code %d: want 4000 to 4999", c)
	}
	return nil
}

func (m GoAway) check() error {
	if err := checkReason(m.Reason); err != nil {
		return err
	}
	if m.RetryAfter < 0 || m.RetryAfter.Duration() > MaxRetryAfter {
		return fmt.Errorf("retry_after_ms %d: want 0 to %d", m.RetryAfter, MillisOf(MaxRetryAfter))
	}
	return checkText("message", m.Message, false)
}

func (m OpenData) check() error {
	if k, err := ParseToken(m.Token); err != nil || k != TokenData {
		return fmt.Errorf("token: not a %s_ data token", TokenData)
	}
	p := m.Path
	if len(p) == 0 || len(p) > MaxPathLen || p[0] != '/' || strings.HasPrefix(p, "//") {
		return fmt.Errorf("path: want an absolute URL path of at most %d bytes", MaxPathLen)
	}
	for i := 0; i < len(p); i++ {
		if p[i] <= ' ' || p[i] > '~' || p[i] == '?' || p[i] == '#' || p[i] == '\\' {
			return fmt.Errorf("path: only printable ASCII, no query, fragment or backslash")
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("path: no . or .. segments")
		}
	}
	return nil
}

// LogValue keeps the data token out of logs.
func (m OpenData) LogValue() slog.Value {
	return slog.GroupValue(slog.String("path", m.Path), slog.String("token", "redacted"))
}

func (m Kick) check() error {
	if m.Person != KickAll && (len(m.Person) == 0 || len(m.Person) > MaxPersonLen || !isIdent(m.Person)) {
		return fmt.Errorf("person: a user id of 1 to %d printable ASCII characters, or %q", MaxPersonLen, KickAll)
	}
	if err := checkReason(m.Reason); err != nil {
		return err
	}
	return checkText("message", m.Message, false)
}

func (m Close) check() error {
	if err := checkReason(m.Code); err != nil {
		return err
	}
	return checkText("message", m.Message, false)
}

// Encode is m as a frame. A message that breaks its own rules is refused
// here, so a peer never has to.
func Encode(m Message) (Frame, error) {
	if m == nil {
		return Frame{}, api.Errorf(api.KindInvalidArgument, "encode: no message")
	}
	if err := m.check(); err != nil {
		return Frame{}, api.Errorf(api.KindInvalidArgument, "encode %s: %v", m.FrameType(), err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return Frame{}, api.Errorf(api.KindJSON, "encode %s: %w", m.FrameType(), err)
	}
	if len(b) > MaxFrameSize {
		return Frame{}, closeError(CloseTooLarge, api.KindInvalidArgument, "encode %s: %d bytes, over the %d allowed", m.FrameType(), len(b), MaxFrameSize)
	}
	return Frame{Type: m.FrameType(), Payload: b}, nil
}

// Decode is f's message: strict JSON (no unknown field, nothing after the
// value), then the message's own rules. A frame of an unknown type, or
// one that breaks a rule, is invalid_argument with reason protocol_error.
func Decode(f Frame) (Message, error) {
	var m Message
	var err error
	switch f.Type {
	case FrameHello:
		m, err = decode[Hello](f.Payload)
	case FrameWelcome:
		m, err = decode[Welcome](f.Payload)
	case FramePing:
		m, err = decode[Ping](f.Payload)
	case FramePong:
		m, err = decode[Pong](f.Payload)
	case FrameGoAway:
		m, err = decode[GoAway](f.Payload)
	case FrameOpenData:
		m, err = decode[OpenData](f.Payload)
	case FrameKick:
		m, err = decode[Kick](f.Payload)
	case FrameClose:
		m, err = decode[Close](f.Payload)
	default:
		return nil, closeError(CloseProtocolError, api.KindInvalidArgument, "%s: unknown frame type", f.Type)
	}
	if err != nil {
		return nil, closeError(CloseProtocolError, api.KindInvalidArgument, "%s frame: %v", f.Type, err)
	}
	return m, nil
}

func decode[T Message](b []byte) (Message, error) {
	if len(b) > MaxFrameSize {
		return nil, fmt.Errorf("%d bytes, over the %d allowed", len(b), MaxFrameSize)
	}
	var m T
	if err := strictJSON(b, &m); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}
