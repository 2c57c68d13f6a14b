package mcpserve

import (
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersions are the MCP revisions a Server speaks, newest first:
// every one the SDK speaks. An initialize asking for one of them is answered
// with it; one asking for another is answered with the newest initialize
// still exists in (initialize is gone from ModernVersion on).
var ProtocolVersions = sdk.SupportedProtocolVersions()

// Revisions whose rules differ from the ones before them. Revision names are
// ISO dates, so comparing the strings orders them in time.
const (
	// ModernVersion starts the stateless era (SEP-2575): no initialize and
	// no session; every request names its revision in its _meta
	// (io.modelcontextprotocol/protocolVersion) with the client's
	// capabilities, server/discover replaces initialize, subscriptions/listen
	// carries notifications, and ping, logging/setLevel and initialize are
	// gone. Over HTTP such requests are served statelessly: no
	// Mcp-Session-Id, no GET stream, no DELETE.
	ModernVersion = "2026-07-28"
	// ToolErrorVersion is the first revision in which tools/call answers
	// arguments that do not fit the tool's input schema as a tool error
	// (isError, kind invalid_argument) the model can read and correct,
	// rather than as JSON-RPC -32602 (SEP-1303).
	ToolErrorVersion = "2025-11-25"
	// httpDefaultVersion is what a streamable-HTTP request without an
	// MCP-Protocol-Version header speaks: the header came in 2025-06-18, and
	// its rules say to assume 2025-03-26 without it.
	httpDefaultVersion = "2025-03-26"
	// metaVersionKey is where a ModernVersion request names its revision,
	// and metaServerInfoKey where a result names its server.
	metaVersionKey    = "io.modelcontextprotocol/protocolVersion"
	metaServerInfoKey = "io.modelcontextprotocol/serverInfo"
)

// IsModern reports whether revision v is of the stateless era.
func IsModern(v string) bool { return v >= ModernVersion }

// negotiate is the revision initialize answers for an asked one, as the
// SDK negotiates it: the asked one when the server speaks it and it still
// has initialize, else the newest that has.
func negotiate(asked string) string {
	newest := ""
	for _, v := range ProtocolVersions {
		if IsModern(v) {
			continue
		}
		if v == asked {
			return v
		}
		if newest == "" {
			newest = v
		}
	}
	return newest
}

// metaVersion is the revision a request names in params._meta, or "".
func metaVersion(params json.RawMessage) string {
	if !isObject(params) {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	if json.Unmarshal(p.Meta[metaVersionKey], &v) != nil {
		return ""
	}
	return v
}

// methodsOf are the request methods each era serves; any other request is
// answered -32601 before it reaches the SDK. Notifications pass: JSON-RPC
// forbids answering them, and the SDK ignores the ones it does not know.
var (
	legacyMethods = map[string]bool{
		"initialize":       true,
		"ping":             true,
		"tools/list":       true,
		"tools/call":       true,
		"logging/setLevel": true,
	}
	modernMethods = map[string]bool{
		"server/discover":      true,
		"tools/list":           true,
		"tools/call":           true,
		"subscriptions/listen": true,
	}
)
