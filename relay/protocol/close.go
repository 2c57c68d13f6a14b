package protocol

import (
	"fmt"

	"github.com/trycua/cua-spacesd/api"
)

// CloseCode says why a control session, a data connection or a relayed
// stream ended. The numbers sit in the WebSocket private range
// (4000-4999), so a WSS close frame carries one as is; String is the word
// every log and client uses for it. A code this build does not know is
// still carried and printed ("close_4999"), never refused: a newer peer
// may end a session for a reason an older one has no name for.
type CloseCode uint16

// The close codes. Numbers are part of the wire: never renumber one.
const (
	// CloseNormal: the session was done (a detach, a shutdown).
	CloseNormal CloseCode = 4000
	// CloseProtocolError: the peer sent something this protocol does not
	// allow (a malformed frame, a frame out of turn, an unknown type).
	CloseProtocolError CloseCode = 4001
	// CloseUnsupportedVersion: Hello and the relay share no version.
	CloseUnsupportedVersion CloseCode = 4002
	// CloseTokenInvalid: the computer or data token is unknown or malformed.
	CloseTokenInvalid CloseCode = 4003
	// CloseTokenRevoked: the token was revoked (the computer unregistered).
	CloseTokenRevoked CloseCode = 4004
	// CloseTokenRotated: a new token replaced the one this session used.
	CloseTokenRotated CloseCode = 4005
	// CloseGoingAway: the relay is restarting or shedding load; come back
	// after GoAway.RetryAfter.
	CloseGoingAway CloseCode = 4006
	// CloseKicked: the person's access ended (unshare, revocation).
	CloseKicked CloseCode = 4007
	// CloseReplaced: a newer session of the same computer took its place.
	CloseReplaced CloseCode = 4008
	// CloseHeartbeatTimeout: no frame from the peer for MissedHeartbeats
	// heartbeat intervals.
	CloseHeartbeatTimeout CloseCode = 4009
	// CloseTooManySessions: the relay is at its cap of sessions.
	CloseTooManySessions CloseCode = 4010
	// CloseTooManyStreams: the session is at its cap of streams.
	CloseTooManyStreams CloseCode = 4011
	// CloseTooLarge: a frame or a stream header over its limit.
	CloseTooLarge CloseCode = 4012
	// CloseGrantInvalid: a stream's grant failed VerifyGrant.
	CloseGrantInvalid CloseCode = 4013
	// CloseGrantKeyChanged: the relay offered a grant key other than the
	// one the Space pinned; it must be registered again.
	CloseGrantKeyChanged CloseCode = 4014
	// CloseInternalError: the peer failed in a way no other code names.
	CloseInternalError CloseCode = 4015
)

var closeNames = map[CloseCode]string{
	CloseNormal:             "normal",
	CloseProtocolError:      "protocol_error",
	CloseUnsupportedVersion: "unsupported_version",
	CloseTokenInvalid:       "token_invalid",
	CloseTokenRevoked:       "token_revoked",
	CloseTokenRotated:       "token_rotated",
	CloseGoingAway:          "going_away",
	CloseKicked:             "kicked",
	CloseReplaced:           "replaced",
	CloseHeartbeatTimeout:   "heartbeat_timeout",
	CloseTooManySessions:    "too_many_sessions",
	CloseTooManyStreams:     "too_many_streams",
	CloseTooLarge:           "too_large",
	CloseGrantInvalid:       "grant_invalid",
	CloseGrantKeyChanged:    "grant_key_changed",
	CloseInternalError:      "internal_error",
}

// CloseCodes lists every known code in order (for documentation and tests).
func CloseCodes() []CloseCode {
	out := make([]CloseCode, 0, len(closeNames))
	for c := CloseNormal; c <= CloseInternalError; c++ {
		out = append(out, c)
	}
	return out
}

func (c CloseCode) String() string {
	if s, ok := closeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("close_%d", uint16(c))
}

// Known reports whether this build has a name for c.
func (c CloseCode) Known() bool { _, ok := closeNames[c]; return ok }

// Kind is the api kind of an error a client reports when c ended its
// session or stream: the token cases are unauthenticated, a kick
// permission_denied, a cap limit_exceeded, the rest relay.
func (c CloseCode) Kind() api.Kind {
	switch c {
	case CloseTokenInvalid, CloseTokenRevoked, CloseTokenRotated, CloseGrantInvalid, CloseGrantKeyChanged:
		return api.KindUnauthenticated
	case CloseKicked:
		return api.KindPermissionDenied
	case CloseTooManySessions, CloseTooManyStreams:
		return api.KindLimitExceeded
	}
	return api.KindRelay
}

// Err is the error a client reports when c ended its session or stream,
// with the peer's message (if any) after the code's word.
func (c CloseCode) Err(message string) *api.Error {
	if message == "" {
		return api.Errorf(c.Kind(), "relay session ended: %s", c)
	}
	return api.Errorf(c.Kind(), "relay session ended: %s: %s", c, message)
}

// closeError is an error of this package that says, in its reason, which
// close code its session or stream should end with.
func closeError(c CloseCode, kind api.Kind, format string, args ...any) *api.Error {
	return api.Errorf(kind, format, args...).WithReason(c.String())
}

// CloseCodeFor answers the code to end a session or stream with after
// err: the one a parser of this package named in the error's reason, else
// CloseProtocolError for bad input (invalid_argument), CloseGrantInvalid
// for a refused grant, and CloseInternalError for the rest.
func CloseCodeFor(err error) CloseCode {
	if err == nil {
		return CloseNormal
	}
	e := api.AsError(err)
	for c, name := range closeNames {
		if e.Reason == name {
			return c
		}
	}
	switch e.Kind {
	case api.KindInvalidArgument:
		return CloseProtocolError
	case api.KindUnauthenticated, api.KindPermissionDenied:
		return CloseGrantInvalid
	}
	return CloseInternalError
}
