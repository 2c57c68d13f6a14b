// Package httpapi is what every HTTP route of cua-spacesd shares: the error
// envelope and the status each error travels with, strict JSON bodies,
// query parameters, and deadlines for bulk bodies that stall. The server and
// every service use it, so a route answers the same way wherever it lives.
package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// MaxJSONBodyBytes bounds every JSON request body; bulk bytes travel as
// plain bodies on their own routes.
const MaxJSONBodyBytes = 4 << 20

// LimitRetryAfter is the Retry-After of a retryable limit_exceeded answer.
// The limits it answers free up when something ends on its own (a process
// exits, an upload is committed or expires), at a time the daemon cannot
// foresee: a second is a poll that costs both sides little.
const LimitRetryAfter = time.Second

// WriteJSON answers v with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// KindRecorder is a ResponseWriter that wants to know the kind of an error
// answer (the daemon's request log names it).
type KindRecorder interface{ RecordKind(api.Kind) }

// WriteError answers err in the error envelope with its kind's status. A
// retryable limit_exceeded (429) says when to try again in Retry-After.
func WriteError(w http.ResponseWriter, err error) {
	e := api.AsError(err)
	if rw, ok := w.(KindRecorder); ok {
		rw.RecordKind(e.Kind)
	}
	if e.Kind == api.KindLimitExceeded && e.Retryable {
		w.Header().Set("Retry-After", strconv.Itoa(int(LimitRetryAfter/time.Second)))
	}
	WriteJSON(w, StatusOf(e), api.ErrorEnvelope{Error: e})
}

// ErrUnsupportedMediaType is the cause of the invalid_argument error of a
// request whose Content-Type is not the one its route takes (HTTP 415).
var ErrUnsupportedMediaType = errors.New("unsupported media type")

// ErrMethodNotAllowed is the cause of the invalid_argument error of a
// request to a path served only with other methods (HTTP 405).
var ErrMethodNotAllowed = errors.New("method not allowed")

// StatusOf is the HTTP status an error travels with: its kind's, except for
// the few answers HTTP has a sharper word for (SharperStatuses).
func StatusOf(e *api.Error) int {
	for _, s := range SharperStatuses() {
		if e.Kind != s.Kind {
			continue
		}
		for _, cause := range s.Causes {
			if errors.Is(e, cause) {
				return s.Status
			}
		}
	}
	return StatusFor(e.Kind)
}

// SharperStatus is an answer whose kind travels with a status of its own
// when the error wraps one of Causes.
type SharperStatus struct {
	Kind   api.Kind
	Causes []error
	Status int
	// When says in words which errors these are (docs/api.md shows it).
	When string
}

// SharperStatuses lists the answers HTTP has a sharper word for than their
// kind's status; StatusOf applies them and docs/api.md is generated from them.
func SharperStatuses() []SharperStatus {
	return []SharperStatus{
		{api.KindIO, []error{syscall.ENOSPC, syscall.EDQUOT}, http.StatusInsufficientStorage, "a full disk (or quota)"},
		{api.KindInvalidArgument, []error{api.ErrRangeNotSatisfiable}, http.StatusRequestedRangeNotSatisfiable, "a read that starts at or past the end of the file"},
		{api.KindInvalidArgument, []error{ErrUnsupportedMediaType}, http.StatusUnsupportedMediaType, "a body whose Content-Type is not the one its route takes"},
		{api.KindInvalidArgument, []error{ErrMethodNotAllowed}, http.StatusMethodNotAllowed, "a method the path is not served with (public paths only)"},
	}
}

// StatusFor maps a kind to its HTTP status (api.Kind.HTTPStatus).
func StatusFor(k api.Kind) int { return k.HTTPStatus() }

// StatusClientClosedRequest is the status of kind cancelled.
const StatusClientClosedRequest = api.StatusClientClosedRequest

// DecodeBody reads a JSON body into a T, refusing unknown fields, trailing
// data and bodies over MaxJSONBodyBytes with kind invalid_argument.
func DecodeBody[T any](r *http.Request) (T, error) {
	var v T
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxJSONBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return v, api.Errorf(api.KindInvalidArgument, "request body is over %d bytes", MaxJSONBodyBytes)
		case errors.Is(err, io.EOF):
			return v, api.Errorf(api.KindInvalidArgument, "request body is empty; a JSON object was expected")
		}
		return v, api.Errorf(api.KindInvalidArgument, "request body is not valid JSON for this route: %v", err)
	}
	if dec.More() {
		return v, api.Errorf(api.KindInvalidArgument, "request body has data after the JSON object")
	}
	return v, nil
}

// NoContent is the result of an operation that only succeeds or fails: it
// is answered 204 with no body, on every route alike.
type NoContent struct{}

// Answer writes v as JSON (204 for NoContent), or err when it is set.
func Answer(w http.ResponseWriter, v any, err error) {
	switch {
	case err != nil:
		WriteError(w, err)
	case v == (any)(NoContent{}):
		w.WriteHeader(http.StatusNoContent)
	default:
		WriteJSON(w, http.StatusOK, v)
	}
}

// BodyRoute is the handler of an operation that takes a JSON body: decode
// it into a T (refusing what DecodeBody refuses), run do, answer its result.
func BodyRoute[T, R any](do func(*http.Request, T) (R, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := DecodeBody[T](r)
		if err != nil {
			WriteError(w, err)
			return
		}
		res, err := do(r, req)
		Answer(w, res, err)
	}
}

// Done turns an operation that returns only an error into one answering NoContent.
func Done[T any](do func(T) error) func(*http.Request, T) (NoContent, error) {
	return func(_ *http.Request, req T) (NoContent, error) { return NoContent{}, do(req) }
}

// ReadJSONBody reads a JSON request body of at most MaxJSONBodyBytes for a
// parser that owns the decoding (so it can be fuzzed without HTTP).
func ReadJSONBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxJSONBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, api.Errorf(api.KindInvalidArgument, "request body is over %d bytes", MaxJSONBodyBytes)
		}
		return nil, api.Errorf(api.KindInvalidArgument, "read request body: %v", err)
	}
	return b, nil
}

// CountingWriter adds the bytes written to a counter (a metric).
type CountingWriter struct {
	W     io.Writer
	Count func(int64) int64
}

func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.Count(int64(n))
	return n, err
}
