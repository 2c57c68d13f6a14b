package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
)

// OutputSchema is the output schema tools/list shows for a tool: its
// result, or the error envelope every tool answers when it fails. Clients
// validate structuredContent against the schema on isError results too
// (the TypeScript SDK does), so a schema of the result alone would turn
// each failure into a client-side schema error.
func OutputSchema(t *Tool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{t.Output, errorEnvelopeSchema}}
}

// ErrorEnvelope is the structuredContent of a tool that ran and failed.
type ErrorEnvelope struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error of an ErrorEnvelope: the kind a caller branches
// on, the message a person reads, and what the daemon said besides.
type ErrorDetail struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Reason narrows the kind (permission_denied sharing_needs_team).
	Reason     string `json:"reason,omitempty"`
	Feature    string `json:"feature,omitempty"`
	Limitation string `json:"limitation,omitempty"`
	Hint       string `json:"hint,omitempty"`
}

var errorEnvelopeSchema = func() *jsonschema.Schema {
	s, err := jsonschema.For[ErrorEnvelope](nil)
	if err != nil {
		panic(err)
	}
	return s
}()

// ErrorResult is the envelope of a tool that ran and failed.
func ErrorResult(err error) *sdk.CallToolResult {
	e := api.AsError(err)
	return &sdk.CallToolResult{
		IsError: true,
		Content: []sdk.Content{&sdk.TextContent{Text: "error: " + e.Error()}},
		StructuredContent: ErrorEnvelope{Error: ErrorDetail{
			Kind: string(e.Kind), Message: e.Error(), Reason: e.Reason, Feature: e.Feature, Limitation: e.Limitation, Hint: e.Hint,
		}},
	}
}

// toResult is the tools/call answer of a call that returned r and err.
func toResult(r *Result, err error) *sdk.CallToolResult {
	if err != nil {
		return ErrorResult(err)
	}
	out := &sdk.CallToolResult{Content: []sdk.Content{}}
	if r == nil {
		return out
	}
	if r.Raw != nil {
		raw, err := rawResult(r.Raw)
		if err != nil {
			return ErrorResult(err)
		}
		return raw
	}
	if r.Image != nil {
		out.Content = append(out.Content, &sdk.ImageContent{Data: r.Image.Data, MIMEType: r.Image.MIMEType})
	}
	if r.Text != "" || len(out.Content) == 0 {
		out.Content = append(out.Content, &sdk.TextContent{Text: r.Text})
	}
	if r.Structured != nil {
		// structuredContent must be a JSON object; marshal once here so a
		// tool's struct and a map are treated alike.
		if b, err := json.Marshal(r.Structured); err == nil && len(b) > 0 && b[0] == '{' {
			out.StructuredContent = json.RawMessage(b)
		} else if err == nil {
			out.StructuredContent = map[string]json.RawMessage{"result": b}
		} else {
			out.Content = append(out.Content, &sdk.TextContent{Text: fmt.Sprintf("(structured result unavailable: %v)", err)})
		}
	}
	return out
}

// RawResult is the part of another server's tools/call result that is
// passed on: its content parts, structuredContent and isError.
type RawResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
}

// rawResult turns another server's result into ours without decoding its
// parts: an SDK type per part would drop what it does not know (a new part
// type, a field) and re-encode base64 and numbers its own way.
func rawResult(raw json.RawMessage) (*sdk.CallToolResult, error) {
	var r RawResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, api.Errorf(api.KindMCP, "the tool's result is not a tools/call result: %v", err)
	}
	out := &sdk.CallToolResult{Content: make([]sdk.Content, len(r.Content)), IsError: r.IsError}
	for i, part := range r.Content {
		out.Content[i] = rawContent{TextContent: &sdk.TextContent{}, raw: part}
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		out.StructuredContent = r.StructuredContent
	}
	return out, nil
}

// rawContent is a content part passed on as another server sent it. The
// SDK's Content interface has an unexported method, so a type of ours meets
// it only by embedding one of the SDK's; MarshalJSON, the one method the
// server calls on a result's parts, is ours and answers the part unchanged.
// (encoding/json still folds the part's white space and writes <, > and &
// as \u escapes: the values every JSON reader sees stay the same.)
type rawContent struct {
	*sdk.TextContent
	raw json.RawMessage
}

func (c rawContent) MarshalJSON() ([]byte, error) { return c.raw, nil }

// errorKindOf is the kind of an isError result for the log line: the
// envelope's, or "tool_error" for another server's error without one.
func errorKindOf(r *sdk.CallToolResult) string {
	b, err := json.Marshal(r.StructuredContent)
	if err == nil {
		var env ErrorEnvelope
		if json.Unmarshal(b, &env) == nil && env.Error.Kind != "" {
			return env.Error.Kind
		}
	}
	return "tool_error"
}

// CallTool runs one of the server's tools in process and answers what
// tools/call would have: the result as JSON, a tool error included (its
// arguments are checked against its schema first, as the gate checks a
// call from 2025-11-25 on). A tool the server does not serve is not_found.
func (s *Server) CallTool(ctx context.Context, name string, c *Call) (json.RawMessage, error) {
	t, ok := s.byName[name]
	if !ok {
		return nil, api.Errorf(api.KindNotFound, "no tool %q: list_tools names the tools", name)
	}
	if c.Progress == nil {
		c.Progress = noProgress
	}
	var out *sdk.CallToolResult
	if msg := s.gate.checkArguments(name, c.Args); msg != "" {
		out = ErrorResult(api.Errorf(api.KindInvalidArgument, "%s", msg))
	} else {
		out = s.run(ctx, t, c)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, api.Errorf(api.KindJSON, "%s: encode its result: %w", name, err)
	}
	return b, nil
}
