// Package api is the wire contract of cua-spacesd: request and response
// types, feature names, the error envelope and a small Go client. The bridge,
// the relay and the tests import this package, never the daemon's internals.
package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Kind is a stable error kind from the Spaces errors document. Callers branch
// on it; the message is for people.
type Kind string

// The kinds cua-spacesd and cua-bridge answer with.
const (
	KindInvalidArgument     Kind = "invalid_argument"
	KindNotFound            Kind = "not_found"
	KindSpacesdNotAvailable Kind = "spacesd_not_available"
	KindCapabilityMissing   Kind = "capability_missing"
	KindUnauthenticated     Kind = "unauthenticated"
	KindPermissionDenied    Kind = "permission_denied"
	KindAmbiguousSandbox    Kind = "ambiguous_sandbox"
	KindTransferFailed      Kind = "transfer_failed"
	KindTimeout             Kind = "timeout"
	KindCancelled           Kind = "cancelled"
	KindStream              Kind = "stream"
	KindEnv                 Kind = "env"
	KindRelay               Kind = "relay"
	KindMCP                 Kind = "mcp"
	KindIO                  Kind = "io"
	KindJSON                Kind = "json"
	KindForbidden           Kind = "forbidden"
	KindPreconditionFailed  Kind = "precondition_failed"
	KindLimitExceeded       Kind = "limit_exceeded"
)

// Error is the body of every failed spacesd call:
// {"error": {"kind", "message", "retryable", "hint", "feature"?, "limitation"?}}.
type Error struct {
	Kind       Kind   `json:"kind"`
	Message    string `json:"message"`
	Retryable  bool   `json:"retryable"`
	Hint       string `json:"hint,omitempty"`
	Feature    string `json:"feature,omitempty"`
	Limitation string `json:"limitation,omitempty"`
	// Status is the HTTP status the error travelled with (client side) or
	// should travel with (server side); it is not part of the JSON body.
	Status int `json:"-"`
	// cause keeps the wrapped error for errors.Is/As without leaking it to the wire.
	cause error
}

// ErrorEnvelope is the JSON object around an Error on the wire.
type ErrorEnvelope struct {
	Error *Error `json:"error"`
}

func (e *Error) Error() string {
	if e.Feature != "" && e.Limitation != "" && e.Kind == KindCapabilityMissing {
		return fmt.Sprintf("%s: %s", e.Message, e.Limitation)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.cause }

// HTTPStatus is the status an error of this kind travels with.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return StatusFor(e.Kind)
}

// StatusFor maps a kind to its HTTP status.
func StatusFor(k Kind) int {
	switch k {
	case KindInvalidArgument, KindJSON:
		return http.StatusBadRequest
	case KindUnauthenticated:
		return http.StatusUnauthorized
	case KindPermissionDenied, KindForbidden:
		return http.StatusForbidden
	case KindNotFound:
		return http.StatusNotFound
	case KindPreconditionFailed:
		return http.StatusPreconditionFailed
	case KindCapabilityMissing:
		return http.StatusNotImplemented
	case KindTimeout:
		return http.StatusGatewayTimeout
	case KindLimitExceeded:
		return http.StatusTooManyRequests
	case KindTransferFailed:
		return http.StatusUnprocessableEntity
	case KindCancelled:
		return 499 // client closed request, as nginx names it
	default:
		return http.StatusInternalServerError
	}
}

// retryableByDefault says whether the same call may succeed unchanged.
func retryableByDefault(k Kind) bool {
	switch k {
	case KindTimeout, KindEnv, KindStream, KindRelay, KindSpacesdNotAvailable, KindTransferFailed:
		return true
	}
	return false
}

var defaultHints = map[Kind]string{
	KindInvalidArgument:     "check the call against the route's documented arguments; the message names the one at fault",
	KindNotFound:            "list what exists first",
	KindSpacesdNotAvailable: "use an image that runs cua-spacesd, or check the URL",
	KindCapabilityMissing:   "use a Space whose spacesd supports the feature (see GET /v1/capabilities)",
	KindUnauthenticated:     "send Authorization: Bearer <token> with the Space's current token",
	KindPermissionDenied:    "ask the owner for a role that allows this",
	KindTransferFailed:      "retry; check free space and permissions at the destination",
	KindTimeout:             "retry, or raise the timeout",
	KindEnv:                 "retry; if it persists, check the spacesd log in the Space",
	KindIO:                  "check the path, its permissions and the free disk space",
}

// Errorf builds an Error of the given kind with the default retry flag and hint.
func Errorf(kind Kind, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{
		Kind:      kind,
		Message:   err.Error(),
		Retryable: retryableByDefault(kind),
		Hint:      defaultHints[kind],
		cause:     errors.Unwrap(err),
	}
}

// WithHint returns e with its hint replaced.
func (e *Error) WithHint(hint string) *Error { e.Hint = hint; return e }

// WithStatus returns e travelling with another HTTP status than its kind's
// (a full disk: kind io, 507 Insufficient Storage).
func (e *Error) WithStatus(status int) *Error { e.Status = status; return e }

// WithRetryable returns e with its retry flag replaced.
func (e *Error) WithRetryable(r bool) *Error { e.Retryable = r; return e }

// CapabilityMissing is the error of a call that needs an unsupported feature.
func CapabilityMissing(feature Feature, limitation string) *Error {
	return &Error{
		Kind:       KindCapabilityMissing,
		Message:    fmt.Sprintf("feature %s is not supported by this Space", feature),
		Retryable:  false,
		Hint:       defaultHints[KindCapabilityMissing],
		Feature:    string(feature),
		Limitation: limitation,
	}
}

// AsError returns err as an *Error, wrapping a foreign error as kind env.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindEnv, Message: err.Error(), Retryable: true, Hint: defaultHints[KindEnv], cause: err}
}

// KindOf returns the kind of err, or "" when err is nil.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	return AsError(err).Kind
}
