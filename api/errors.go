// Package api is the wire contract of cua-spacesd: routes, request and
// response types, feature names and the error envelope. It needs nothing but
// the standard library (and not net/http), so the capabilities, the media
// code, the daemon, the bridge and the relay all stand on it; the Go client
// of the daemon lives apart, in api/client.
package api

import (
	"errors"
	"fmt"
)

// Kind is a stable error kind (docs/errors.md, generated from Kinds). Callers
// branch on it; the message is for people.
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
	// KindHostCapabilityMissing: something the bridge's own machine lacks
	// (no browser for cua-bridge view --open).
	KindHostCapabilityMissing Kind = "host_capability_missing"
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
	// Reason narrows the kind with a stable word a caller may branch on
	// (ReasonIdempotencyKeyReused).
	Reason string `json:"reason,omitempty"`
	// Status is the HTTP status the error travelled with, set by a client
	// that received it; it is not part of the JSON body. Which status an
	// error travels with is the daemon's business (spacesd/httpapi).
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

// retryableByDefault says whether the same call may succeed unchanged.
func retryableByDefault(k Kind) bool {
	switch k {
	case KindTimeout, KindEnv, KindStream, KindRelay, KindSpacesdNotAvailable, KindTransferFailed,
		// A capacity limit (processes running, uploads unfinished) frees
		// up on its own; a size cap that retrying cannot pass says
		// WithRetryable(false).
		KindLimitExceeded:
		return true
	}
	return false
}

// KindDoc says what a kind means. docs/errors.md is generated from Kinds
// (with each kind's HTTP status, retry flag and default hint), so a kind
// added without a meaning fails that document's test.
type KindDoc struct {
	Kind Kind
	// Meaning is one sentence: what went wrong.
	Meaning string
	// ClientSide kinds are made on the caller's side (api/client,
	// cua-bridge), never answered by a daemon over HTTP: they have no status.
	ClientSide bool
	// Retry qualifies the kind's default retry flag when some errors of
	// the kind say otherwise ("" = every error of the kind follows it).
	Retry string
}

// Kinds lists every kind with its meaning, in the order of the const block.
func Kinds() []KindDoc {
	return []KindDoc{
		{Kind: KindInvalidArgument, Meaning: "An argument is missing, malformed or out of range (a bad path, unknown JSON field, wrong Content-Type, a read past the end of a file); the message names it."},
		{Kind: KindNotFound, Meaning: "No process, file, upload, window, stream session, service or tool with that id or path (or no registered Space of that name)."},
		{Kind: KindSpacesdNotAvailable, ClientSide: true, Meaning: "The address answered but runs no cua-spacesd (told apart by GET /health), or did not answer at all."},
		{Kind: KindCapabilityMissing, Meaning: "The call needs a feature this Space reports unsupported; the error names the feature and its limitation."},
		{Kind: KindUnauthenticated, Meaning: "The token (or stream ticket) is missing, wrong, expired or from before a rotation."},
		{Kind: KindPermissionDenied, Meaning: "The daemon may not do this: the file system refused it, a symlink is not trusted, or switching users needs a root daemon."},
		{Kind: KindAmbiguousSandbox, ClientSide: true, Meaning: "A short Space name matches more than one registered Space."},
		{Kind: KindTransferFailed, Meaning: "Bytes did not land: a body cut short, or a sha256 that does not match; nothing was written."},
		{Kind: KindTimeout, Meaning: "A wait ran out: a command past its timeout, a display or window manager that did not answer, a process that did not read its stdin."},
		{Kind: KindCancelled, Meaning: "The call ended before its answer because its caller went away (or cancelled it); the message says why the request ended."},
		{Kind: KindStream, ClientSide: true, Meaning: "A stream (process output, file watch) ended under the client: the daemon closed it with a reason, or the link dropped."},
		{Kind: KindEnv, Meaning: "Something in the Space's environment failed that no argument explains (a lost X connection, a failed system call)."},
		{Kind: KindRelay, ClientSide: true, Meaning: "The relay between the client and the Space failed."},
		{Kind: KindMCP, Meaning: "An MCP service inside the Space failed (would not start, exited, answered a JSON-RPC error); the message carries its error."},
		{Kind: KindIO, Meaning: "Reading or writing a file failed for a reason other than permission or a missing path: a full disk, an I/O error."},
		{Kind: KindJSON, Meaning: "A message could not be encoded or parsed as the JSON it should be."},
		{Kind: KindForbidden, Meaning: "The caller is known but this is not its to do: a browser page of another origin, a ticket for another target, input outside a shared window."},
		{Kind: KindPreconditionFailed, Meaning: "What is at the destination is not what the call allows: an existing path without overwrite, a non-empty directory without recursive, an idempotency key whose first answer was too big to keep."},
		{Kind: KindLimitExceeded, Retry: "when the limit frees up on its own (processes running, uploads unfinished), and the answer then carries Retry-After: 1; a limit no retry can pass (a size over a cap) says retryable: false",
			Meaning: "A bound of the daemon was reached; the message names it (GET /v1/capabilities lists the limits)."},
		{Kind: KindHostCapabilityMissing, ClientSide: true, Meaning: "The bridge's own machine lacks what the call needs (no browser for cua-bridge view --open)."},
	}
}

// RetryableByDefault says whether an error of kind k is retryable unless it
// says otherwise (see KindDoc.Retry).
func RetryableByDefault(k Kind) bool { return retryableByDefault(k) }

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
	KindLimitExceeded:       "wait for some of what holds the limit to finish, then retry",
	KindAmbiguousSandbox:    "use the Space's full registered name",
	KindCancelled:           "nothing to undo; call again when the answer is wanted",
	KindStream:              "reconnect from the offsets you have",
	KindRelay:               "retry; check that the relay and the Space are online",
	KindMCP:                 "check the service with list_tools; the message carries its error",
	KindJSON:                "retry; report it if it persists",
	KindForbidden:           "use the token, or a ticket for this target; the message says what was refused",
	KindPreconditionFailed:  "look at what is at the destination; call again with overwrite (or recursive) if replacing it is meant",

	KindHostCapabilityMissing: "install or set up on this machine what the message names",
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

// WithReason sets the error's reason.
func (e *Error) WithReason(reason string) *Error { e.Reason = reason; return e }

// WithCause returns e wrapping cause for errors.Is and errors.As; the
// cause never reaches the wire.
func (e *Error) WithCause(cause error) *Error { e.cause = cause; return e }

// DefaultHint is the hint an error of kind k carries unless it says better.
func DefaultHint(k Kind) string { return defaultHints[k] }

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

// StatusClientClosedRequest is the HTTP status of a call whose caller went
// away (kind cancelled), as nginx names it; HTTP has no word of its own.
const StatusClientClosedRequest = 499

// HTTPStatus is the HTTP status the daemon and the relay answer a kind
// with (a few errors get a sharper one: the daemon's httpapi). The numbers
// are net/http's, which this package does not import.
func (k Kind) HTTPStatus() int {
	switch k {
	case KindInvalidArgument, KindJSON:
		return 400 // Bad Request
	case KindUnauthenticated:
		return 401 // Unauthorized
	case KindPermissionDenied, KindForbidden:
		return 403 // Forbidden
	case KindNotFound:
		return 404 // Not Found
	case KindPreconditionFailed:
		return 412 // Precondition Failed
	case KindTransferFailed:
		return 422 // Unprocessable Entity
	case KindLimitExceeded:
		return 429 // Too Many Requests
	case KindCancelled:
		return StatusClientClosedRequest
	case KindCapabilityMissing:
		return 501 // Not Implemented
	case KindRelay:
		return 502 // Bad Gateway: the relay, or the Space behind it, failed
	case KindSpacesdNotAvailable:
		return 503 // Service Unavailable
	case KindTimeout:
		return 504 // Gateway Timeout
	}
	return 500 // Internal Server Error
}
