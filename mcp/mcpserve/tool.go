package mcpserve

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"
)

// Tool is one tool a Server serves.
type Tool struct {
	Name string
	// Title is the tool's name for people, shown by hosts that have room.
	Title       string
	Description string
	// Schema is the JSON schema of the arguments (type object). The gate
	// checks every call against it before Run.
	Schema *jsonschema.Schema
	// Output is the JSON schema of a successful call's Structured result;
	// nil when the tool answers no JSON (or passes another server's result
	// through, whose shape it cannot promise).
	Output *jsonschema.Schema
	// Hints tell a host how careful to be with the tool.
	Hints Hints
	Run   func(ctx context.Context, c *Call) (*Result, error)
}

// Hints are a tool's MCP annotations: what a host may assume before it asks
// a person to allow a call. They describe; they enforce nothing.
type Hints struct {
	// ReadOnly: the tool changes nothing.
	ReadOnly bool
	// Destructive: it may delete or overwrite what exists (a command, a
	// write, a click on a "Delete" button). Meaningless when ReadOnly.
	Destructive bool
	// Idempotent: calling it again with the same arguments changes nothing
	// more than the first call did.
	Idempotent bool
	// OpenWorld: it reaches beyond what the server manages (a command that
	// may use the network, an app, a URL of the caller's choosing).
	OpenWorld bool
}

// Call is one invocation of a tool.
type Call struct {
	// Args are the raw JSON arguments, already checked against the tool's
	// Schema; {} when the call had none.
	Args json.RawMessage
	// Progress reports progress to the caller, each report as it comes; a
	// no-op when the caller asked for none. Never nil.
	Progress func(done, total float64, message string)
	// ProgressAsked says the caller sent a progress token: a tool that
	// forwards the call to another server asks that one for progress only
	// then.
	ProgressAsked bool
	// Header holds the HTTP headers of the request that carried the call;
	// nil over stdio.
	Header http.Header
	// Caller is what the HTTP handler in front of the transport attached
	// to the request that carried the call (WithCaller): who made it, as
	// that handler knows them; nil when it attached nothing, and over stdio.
	Caller any
	// LogAttrs are what the tool adds to its call's log line (the Space it
	// reached, say). Never arguments or tokens.
	LogAttrs []slog.Attr
}

// Result is what a successful tool call answers.
type Result struct {
	// Text is the human/LLM-readable answer.
	Text string
	// Structured becomes structuredContent (a JSON object).
	Structured any
	// Image, when set, is sent as an image content part before Text.
	Image *Image
	// Raw, when set, is the whole result of a tools/call another MCP
	// server answered (content, structuredContent, isError), passed on as
	// it came: every content part byte for byte, whatever its type. The
	// other fields are then ignored.
	Raw json.RawMessage
}

// Image is binary image content.
type Image struct {
	Data     []byte
	MIMEType string
}

// noProgress is the Progress of a call that asked for none.
func noProgress(float64, float64, string) {}
