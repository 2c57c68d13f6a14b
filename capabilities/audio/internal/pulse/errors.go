package pulse

import (
	"errors"
	"fmt"
)

// ErrorCode is the code of a server's ERROR answer (pa_error_code_t).
type ErrorCode uint32

// The codes a caller of this package branches on.
const (
	CodeAccess   ErrorCode = 1  // access denied: a wrong cookie from another user
	CodeInvalid  ErrorCode = 3  // invalid argument
	CodeNoEntity ErrorCode = 5  // no such sink, source or stream
	CodeProtocol ErrorCode = 7  // the request was malformed
	CodeVersion  ErrorCode = 17 // incompatible protocol version
)

// codeText is pa_strerror's wording, lowercased to sit inside a sentence.
var codeText = [...]string{
	"OK", "access denied", "unknown command", "invalid argument", "entity exists",
	"no such entity", "connection refused", "protocol error", "timeout",
	"no authentication key", "internal error", "connection terminated", "entity killed",
	"invalid server", "module initialization failed", "bad state", "no data",
	"incompatible protocol version", "too large", "not supported", "unknown error code",
	"no such extension", "obsolete functionality", "missing implementation",
	"client forked", "input/output error", "device or resource busy",
}

func (c ErrorCode) Error() string {
	if int(c) < len(codeText) {
		return codeText[c]
	}
	return fmt.Sprintf("error %d", uint32(c))
}

// ServerError is a request the server answered with ERROR. errors.Is
// matches its Code.
type ServerError struct {
	Command uint32
	Code    ErrorCode
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("the sound server refused %s: %s", commandName(e.Command), e.Code)
}

func (e *ServerError) Unwrap() error { return e.Code }

// ErrClosed is the end of a connection the caller closed.
var ErrClosed = errors.New("the connection to the sound server was closed")

// ErrStreamKilled is the end of a record stream the server removed: its
// source went away, or someone killed the stream (pactl kill-source-output).
var ErrStreamKilled = errors.New("the sound server ended the record stream (its source went away, or the stream was killed)")
