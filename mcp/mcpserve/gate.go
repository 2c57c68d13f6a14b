package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trycua/cua-spacesd/api"
)

// MaxMessageBytes bounds one JSON-RPC message on either transport. Bulk data
// never travels inside MCP messages (upload/download name local paths), so
// a bigger message is a mistake or an attack.
const MaxMessageBytes = 1 << 20

// JSON-RPC error codes the gate answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	// CodeHeaderMismatch: a ModernVersion HTTP request whose Mcp-Method or
	// Mcp-Name header is missing or differs from its body (SEP-2575).
	CodeHeaderMismatch = -32020
)

// Gate validates every incoming JSON-RPC message in front of both transports,
// so that the error codes are the same on stdio and HTTP and do not depend on
// the SDK's own choices (it answers an unknown tool with -32602, for one).
type Gate struct {
	// server names the server in the answers the gate gives itself on
	// ModernVersion, as the SDK does in its own (_meta serverInfo).
	server *sdk.Implementation
	tools  map[string]*jsonschema.Resolved
	// props are each tool's argument names, to refuse a key that differs
	// from one only in case: the tools decode arguments with encoding/json,
	// which matches keys case-insensitively (the last one wins), while the
	// schema check matches them exactly.
	props map[string][]string
}

// NewGate builds a gate for the given tool input schemas; server names the
// server in the gate's own answers.
func NewGate(server *sdk.Implementation, schemas map[string]*jsonschema.Schema) (*Gate, error) {
	g := &Gate{server: server, tools: map[string]*jsonschema.Resolved{}, props: map[string][]string{}}
	for name, s := range schemas {
		for p := range s.Properties {
			g.props[name] = append(g.props[name], p)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", name, err)
		}
		g.tools[name] = r
	}
	return g, nil
}

// Session is what the transport knows of the session a message belongs to.
type Session struct {
	// Version is the revision the transport holds for the message: the one
	// initialize negotiated (stdio), or the MCP-Protocol-Version header
	// (HTTP); "" when there is none yet. A request that names a
	// ModernVersion revision in its _meta speaks that one instead.
	Version string
	// Missing: an HTTP request without Mcp-Session-Id, which only an
	// initialize or a stateless (ModernVersion) request may be.
	Missing bool
	// Headers are the Mcp-Method and Mcp-Name headers of an HTTP request,
	// which a ModernVersion request must carry, equal to its body's; nil
	// over stdio, which has no headers.
	Headers *MethodHeaders
}

// MethodHeaders are the headers in which ModernVersion names a request's
// method and, for tools/call, its tool, so a proxy can route it unread.
type MethodHeaders struct {
	Method, Name string
}

// Violation is a message the gate refused, with the JSON-RPC error to answer.
type Violation struct {
	Code    int
	Message string
	// ID is the request's id (raw JSON), or nil when unknown.
	ID json.RawMessage
	// Notification: the message had no id; over stdio nothing is answered.
	Notification bool
	// ToolError answers a tools/call whose arguments do not fit the tool as
	// a tool that ran and failed (isError, kind invalid_argument), as
	// ToolErrorVersion and later want, instead of with Code.
	ToolError bool
	// version is the revision the answer speaks, and server the server.
	version string
	server  *sdk.Implementation
}

// HTTPStatus is the status an HTTP answer carrying v travels with.
func (v *Violation) HTTPStatus() int {
	if v.ToolError {
		return http.StatusOK
	}
	switch v.Code {
	case CodeParseError, CodeInvalidRequest, CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	// A valid request whose method or params are wrong is answered like any
	// JSON-RPC response.
	return http.StatusOK
}

// Response is the JSON-RPC response for v: an error, or the tool error
// result of a ToolError.
func (v *Violation) Response() []byte {
	id := v.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if v.ToolError {
		var result map[string]any
		b, _ := json.Marshal(ErrorResult(api.Errorf(api.KindInvalidArgument, "%s", v.Message)))
		_ = json.Unmarshal(b, &result)
		if IsModern(v.version) {
			// A stateless-era result says it is complete (there is no more
			// input to ask for) and names its server, as the SDK's own do;
			// a client of that era refuses a result without resultType.
			result["resultType"] = "complete"
			result["_meta"] = map[string]any{metaServerInfoKey: v.server}
		}
		b, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  any             `json:"result"`
		}{"2.0", id, result})
		return b
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{v.Code, v.Message}})
	return b
}

// Check validates one message and says which revision it speaks (for the
// HTTP transport, which serves ModernVersion requests without a session).
func (g *Gate) Check(msg []byte, sess Session) (violation *Violation, version string) {
	version = sess.Version
	if len(msg) > MaxMessageBytes {
		return &Violation{Code: CodeInvalidRequest, Message: fmt.Sprintf("message of %d bytes is over the %d byte limit", len(msg), MaxMessageBytes)}, version
	}
	trimmed := bytes.TrimSpace(msg)
	if !json.Valid(trimmed) {
		return &Violation{Code: CodeParseError, Message: "parse error: the message is not valid JSON"}, version
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		// 2025-03-26 allowed batches and 2025-06-18 removed them; the
		// transport document refuses them on every revision.
		return &Violation{Code: CodeInvalidRequest, Message: "batch arrays are not supported: send one message at a time"}, version
	}
	if trimmed[0] != '{' {
		return &Violation{Code: CodeInvalidRequest, Message: "a JSON-RPC message must be an object"}, version
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return &Violation{Code: CodeInvalidRequest, Message: "a JSON-RPC message must be an object"}, version
	}
	rawID, hasID := m["id"]
	v := &Violation{ID: nil}
	if hasID {
		if !validID(rawID) {
			v.Code, v.Message = CodeInvalidRequest, "id must be a string or a number"
			return v, version
		}
		v.ID = rawID
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		v.Code, v.Message = CodeInvalidRequest, `jsonrpc must be "2.0"`
		return v, version
	}
	rawMethod, hasMethod := m["method"]
	if !hasMethod {
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if hasID && (hasResult != hasError) {
			return nil, version // a response to a server request (e.g. ping)
		}
		v.Code, v.Message = CodeInvalidRequest, "a request needs a method"
		return v, version
	}
	var method string
	if err := json.Unmarshal(rawMethod, &method); err != nil || method == "" {
		v.Code, v.Message = CodeInvalidRequest, "method must be a non-empty string"
		return v, version
	}
	params, hasParams := m["params"]
	// A request that names a stateless revision speaks it, whatever the
	// transport holds; a notification never selects one (SEP-2575).
	if mv := metaVersion(params); hasID && IsModern(mv) {
		version = mv
	}
	if sess.Missing && !IsModern(version) && method != "initialize" {
		v.Code, v.Message = CodeInvalidRequest, fmt.Sprintf("%s needs the Mcp-Session-Id header the server minted at initialize", method)
		v.Notification = !hasID
		return v, version
	}
	if h := sess.Headers; h != nil && IsModern(version) {
		if err := checkHeaders(*h, method, params); err != "" {
			v.Code, v.Message, v.Notification = CodeHeaderMismatch, err, !hasID
			return v, version
		}
	}
	if hasParams && !isNull(params) && !isObject(params) {
		v.Code, v.Message = CodeInvalidParams, "params must be an object"
		v.Notification = !hasID
		if !hasID {
			// A malformed notification is still invalid, but never answered on stdio.
			v.Code = CodeInvalidRequest
		}
		return v, version
	}
	if !hasID {
		return nil, version // notification
	}
	if IsModern(sess.Version) && !IsModern(metaVersion(params)) {
		v.Code, v.Message = CodeInvalidParams, fmt.Sprintf(
			"%s: a %s request names its revision in params._meta[%q], with the client's capabilities", method, sess.Version, metaVersionKey)
		return v, version
	}
	served, other := legacyMethods, modernMethods
	if IsModern(version) {
		served, other = modernMethods, legacyMethods
	}
	if !served[method] {
		v.Code, v.Message = CodeMethodNotFound, fmt.Sprintf("method not found: %q", method)
		if other[method] {
			if IsModern(version) {
				v.Message = fmt.Sprintf("method %q is not part of MCP %s (the stateless revisions have no %s)", method, version, method)
			} else {
				v.Message = fmt.Sprintf("method %q is only part of MCP %s and later", method, ModernVersion)
			}
		}
		return v, version
	}
	switch method {
	case "initialize":
		if !isObject(params) {
			v.Code, v.Message = CodeInvalidParams, "initialize needs params {protocolVersion, capabilities, clientInfo}"
			return v, version
		}
	case "tools/call":
		v.version, v.server = version, g.server
		return g.checkCall(params, v, version >= ToolErrorVersion), version
	}
	return nil, version
}

// checkHeaders is "" when the headers name the request's method (and, for
// tools/call, its tool) as its body does, else why not.
func checkHeaders(h MethodHeaders, method string, params json.RawMessage) string {
	switch {
	case h.Method == "":
		return "a " + ModernVersion + " request names its method in the Mcp-Method header"
	case h.Method != method:
		return fmt.Sprintf("the Mcp-Method header says %q, the body %q", h.Method, method)
	case method != "tools/call":
		return ""
	}
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	switch {
	case h.Name == "":
		return "a " + ModernVersion + " tools/call names its tool in the Mcp-Name header"
	case h.Name != p.Name:
		return fmt.Sprintf("the Mcp-Name header says %q, the body %q", h.Name, p.Name)
	}
	return ""
}

// checkCall checks a tools/call. Arguments that do not fit the tool are a
// tool error when toolErrors is set (ToolErrorVersion and later), -32602
// before; an unknown tool is -32601 on every revision, as the transport
// document says.
func (g *Gate) checkCall(params json.RawMessage, v *Violation, toolErrors bool) *Violation {
	// A map, not a struct: the SDK reads "name" and "arguments" exactly,
	// and a struct would also take "Name" or "ARGUMENTS".
	var p map[string]json.RawMessage
	if !isObject(params) || json.Unmarshal(params, &p) != nil || p["name"] == nil {
		v.Code, v.Message = CodeInvalidParams, "tools/call needs params {name, arguments}"
		return v
	}
	var name string
	if err := json.Unmarshal(p["name"], &name); err != nil {
		v.Code, v.Message = CodeInvalidParams, "tools/call: name must be a string"
		return v
	}
	if _, ok := g.tools[name]; !ok {
		v.Code, v.Message = CodeMethodNotFound, fmt.Sprintf("unknown tool %q: tools/list names the tools", name)
		return v
	}
	if msg := g.checkArguments(name, p["arguments"]); msg != "" {
		return argError(v, toolErrors, msg)
	}
	return nil
}

// checkArguments is "" when raw (absent or null: none) fits the input
// schema of the tool name, which the gate knows, else why not.
func (g *Gate) checkArguments(name string, raw json.RawMessage) string {
	var args any = map[string]any{}
	if len(raw) > 0 && !isNull(raw) {
		if !isObject(raw) {
			return fmt.Sprintf("tools/call %s: arguments must be an object", name)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Sprintf("tools/call %s: arguments: %v", name, err)
		}
		for k := range m {
			for _, prop := range g.props[name] {
				if k != prop && strings.EqualFold(k, prop) {
					return fmt.Sprintf("tools/call %s: argument %q: names are case-sensitive; did you mean %q?", name, k, prop)
				}
			}
		}
		args = m
	}
	if err := g.tools[name].Validate(args); err != nil {
		return fmt.Sprintf("tools/call %s: arguments do not match the input schema: %v", name, err)
	}
	return ""
}

// argError refuses a tool's arguments: as a tool error the model reads, or
// as -32602.
func argError(v *Violation, toolError bool, msg string) *Violation {
	v.Code, v.Message, v.ToolError = CodeInvalidParams, msg, toolError
	return v
}

func validID(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return false
	}
	switch t[0] {
	case '"':
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func isNull(raw json.RawMessage) bool {
	return strings.TrimSpace(string(raw)) == "null"
}
