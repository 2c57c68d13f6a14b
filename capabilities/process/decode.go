package process

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/trycua/cua-spacesd/api"
)

// Stream input message types a client may send (api.StreamInput.Type).
const (
	InputStdin      = "stdin"
	InputCloseStdin = "close_stdin"
	InputResize     = "resize"
	InputSignal     = "signal"
)

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data: a typo in a field name must be an error, not a default.
func decodeStrict(b []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return api.Errorf(api.KindInvalidArgument, "%s is empty; a JSON object was expected", what)
		}
		return api.Errorf(api.KindInvalidArgument, "%s is not valid JSON: %v", what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return api.Errorf(api.KindInvalidArgument, "%s has data after the JSON object", what)
	}
	return nil
}

// ParseExecRequest decodes and checks the body of POST /v1/exec.
func ParseExecRequest(b []byte) (api.ExecRequest, error) {
	var req api.ExecRequest
	if err := decodeStrict(b, &req, "exec request"); err != nil {
		return req, err
	}
	if req.MaxOutputBytes < 0 {
		return req, api.Errorf(api.KindInvalidArgument, "max_output_bytes=%d must be 0 (the daemon's limit) or positive", req.MaxOutputBytes)
	}
	return req, ValidateCommand(&req.Command)
}

// ParseStartRequest decodes and checks the body of POST /v1/processes.
func ParseStartRequest(b []byte) (api.StartRequest, error) {
	var req api.StartRequest
	if err := decodeStrict(b, &req, "start request"); err != nil {
		return req, err
	}
	if req.PTY != nil && (req.PTY.Cols == 0 || req.PTY.Rows == 0) {
		return req, api.Errorf(api.KindInvalidArgument, "pty size %dx%d: cols and rows must be positive", req.PTY.Cols, req.PTY.Rows)
	}
	return req, ValidateCommand(&req.Command)
}

// ParseStreamInput decodes and checks one message a client sent on a
// process stream.
func ParseStreamInput(b []byte) (api.StreamInput, error) {
	var in api.StreamInput
	if err := decodeStrict(b, &in, "stream input message"); err != nil {
		return in, err
	}
	switch in.Type {
	case InputStdin, InputCloseStdin:
	case InputResize:
		if in.Size == nil || in.Size.Cols == 0 || in.Size.Rows == 0 {
			return in, api.Errorf(api.KindInvalidArgument, "resize needs size with positive cols and rows")
		}
	case InputSignal:
		if _, err := ParseSignal(in.Signal); err != nil {
			return in, err
		}
	default:
		return in, api.Errorf(api.KindInvalidArgument, "stream input type %q: use stdin, close_stdin, resize or signal", in.Type)
	}
	return in, nil
}
