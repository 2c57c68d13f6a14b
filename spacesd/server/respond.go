package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// MaxJSONBodyBytes bounds every JSON request body; bulk bytes travel as
// plain bodies on their own routes.
const MaxJSONBodyBytes = 4 << 20

// writeJSON answers v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers err in the error envelope with its kind's status.
func writeError(w http.ResponseWriter, err error) {
	e := api.AsError(err)
	if rw, ok := w.(*recorder); ok {
		rw.kind = e.Kind
	}
	writeJSON(w, statusOf(e), api.ErrorEnvelope{Error: e})
}

// statusOf is the HTTP status an error travels with: its kind's, except for
// the few answers HTTP has a sharper word for.
func statusOf(e *api.Error) int {
	switch {
	case e.Kind == api.KindIO && (errors.Is(e, syscall.ENOSPC) || errors.Is(e, syscall.EDQUOT)):
		return http.StatusInsufficientStorage
	case e.Kind == api.KindInvalidArgument && errors.Is(e, files.ErrRangeNotSatisfiable):
		return http.StatusRequestedRangeNotSatisfiable
	}
	return statusFor(e.Kind)
}

// statusFor maps a kind to its HTTP status.
func statusFor(k api.Kind) int {
	switch k {
	case api.KindInvalidArgument, api.KindJSON:
		return http.StatusBadRequest
	case api.KindUnauthenticated:
		return http.StatusUnauthorized
	case api.KindPermissionDenied, api.KindForbidden:
		return http.StatusForbidden
	case api.KindNotFound:
		return http.StatusNotFound
	case api.KindPreconditionFailed:
		return http.StatusPreconditionFailed
	case api.KindCapabilityMissing:
		return http.StatusNotImplemented
	case api.KindTimeout:
		return http.StatusGatewayTimeout
	case api.KindLimitExceeded:
		return http.StatusTooManyRequests
	case api.KindTransferFailed:
		return http.StatusUnprocessableEntity
	case api.KindCancelled:
		return 499 // client closed request, as nginx names it
	default:
		return http.StatusInternalServerError
	}
}

// decodeBody reads a JSON body into a T, refusing unknown fields, trailing
// data and bodies over MaxJSONBodyBytes with kind invalid_argument.
func decodeBody[T any](r *http.Request) (T, error) {
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

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, api.Errorf(api.KindInvalidArgument, "query parameter %s=%q must be an integer from %d to %d", name, s, lo, hi)
	}
	return v, nil
}

// queryBool parses an optional boolean query parameter.
func queryBool(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, api.Errorf(api.KindInvalidArgument, "query parameter %s=%q must be true or false", name, s)
	}
	return v, nil
}

// noContent is the result of an operation that only succeeds or fails: it
// is answered 204 with no body, on every route alike.
type noContent struct{}

// answer writes v as JSON (204 for noContent), or err when it is set.
func answer(w http.ResponseWriter, v any, err error) {
	switch {
	case err != nil:
		writeError(w, err)
	case v == (any)(noContent{}):
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// bodyRoute is the handler of an operation that takes a JSON body: decode
// it into a T (refusing what decodeBody refuses), run do, answer its result.
func bodyRoute[T, R any](do func(*http.Request, T) (R, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := decodeBody[T](r)
		if err != nil {
			writeError(w, err)
			return
		}
		res, err := do(r, req)
		answer(w, res, err)
	}
}

// done turns an operation that returns only an error into one answering noContent.
func done[T any](do func(T) error) func(*http.Request, T) (noContent, error) {
	return func(_ *http.Request, req T) (noContent, error) { return noContent{}, do(req) }
}
