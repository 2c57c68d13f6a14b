package mcpserve_test

import (
	"encoding/json"
	"fmt"
	"testing"

	mcp "github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// modernMeta is the _meta a stateless-era request carries.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

var modernSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s","command":"true"},` + modernMeta + `}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s","command":1},` + modernMeta + `}}`,
	`{"jsonrpc":"2.0","id":5,"method":"ping","params":{` + modernMeta + `}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`,
}

// What the gate does with a message, in words.
const (
	pass      = "pass"
	toolError = "tool error"
)

func verdict(v *mcp.Violation) string {
	switch {
	case v == nil:
		return pass
	case v.ToolError:
		return toolError
	}
	return fmt.Sprint(v.Code)
}

// Each revision keeps its own rules: arguments that do not fit a tool are
// -32602 up to 2025-06-18 and a tool error from 2025-11-25 (SEP-1303); the
// stateless revision needs no session, has server/discover and no ping or
// initialize, and names itself in every request's _meta.
func TestGateRevisions(t *testing.T) {
	g := newGate(t)
	initialize := func(v string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	}
	badArgs := gateSeeds[3]      // command is a number
	caseFolded := gateSeeds[17]  // COMMAND beside command
	unknownTool := gateSeeds[4]  // -32601 on every revision
	call := gateSeeds[2]         // a fine call
	discover := modernSeeds[0]   // server/discover
	modernCall := modernSeeds[2] // a fine stateless call
	modernBadArgs := modernSeeds[3]
	modernPing := modernSeeds[4]
	bareList := modernSeeds[5] // no _meta
	notFound, invalidRequest, invalidParams := fmt.Sprint(mcp.CodeMethodNotFound), fmt.Sprint(mcp.CodeInvalidRequest), fmt.Sprint(mcp.CodeInvalidParams)

	for _, tc := range []struct {
		name    string
		sess    mcp.Session
		msg     string
		want    string
		version string // the revision Check says the message speaks
	}{
		{"2024-11-05 bad arguments", mcp.Session{Version: "2024-11-05"}, badArgs, invalidParams, "2024-11-05"},
		{"2025-03-26 bad arguments", mcp.Session{Version: "2025-03-26"}, badArgs, invalidParams, "2025-03-26"},
		{"2025-06-18 bad arguments", mcp.Session{Version: "2025-06-18"}, badArgs, invalidParams, "2025-06-18"},
		{"2025-11-25 bad arguments", mcp.Session{Version: "2025-11-25"}, badArgs, toolError, "2025-11-25"},
		{"2025-11-25 case-folded argument", mcp.Session{Version: "2025-11-25"}, caseFolded, toolError, "2025-11-25"},
		{"2025-11-25 unknown tool", mcp.Session{Version: "2025-11-25"}, unknownTool, notFound, "2025-11-25"},
		{"2025-11-25 call", mcp.Session{Version: "2025-11-25"}, call, pass, "2025-11-25"},
		{"2025-11-25 initialize without session", mcp.Session{Missing: true}, initialize("2025-11-25"), pass, ""},
		{"2025-11-25 call without session", mcp.Session{Version: "2025-11-25", Missing: true}, call, invalidRequest, "2025-11-25"},
		{"2025-06-18 server/discover", mcp.Session{Version: "2025-06-18"}, `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, notFound, "2025-06-18"},
		{"2026-07-28 discover without session", mcp.Session{Version: "2026-07-28", Missing: true}, discover, pass, "2026-07-28"},
		{"2026-07-28 discover, header absent", mcp.Session{Missing: true}, discover, pass, "2026-07-28"},
		{"2026-07-28 call without session", mcp.Session{Version: "2026-07-28", Missing: true}, modernCall, pass, "2026-07-28"},
		{"2026-07-28 bad arguments", mcp.Session{Version: "2026-07-28", Missing: true}, modernBadArgs, toolError, "2026-07-28"},
		{"2026-07-28 ping", mcp.Session{Version: "2026-07-28", Missing: true}, modernPing, notFound, "2026-07-28"},
		{"2026-07-28 initialize", mcp.Session{Version: "2026-07-28", Missing: true}, initialize("2026-07-28"), invalidParams, "2026-07-28"},
		{"2026-07-28 header, request without _meta", mcp.Session{Version: "2026-07-28", Missing: true}, bareList, invalidParams, "2026-07-28"},
		{"2026-07-28 over stdio", mcp.Session{}, modernCall, pass, "2026-07-28"},
		{"2026-07-28 over HTTP with its headers", mcp.Session{Missing: true, Headers: &mcp.MethodHeaders{Method: "tools/call", Name: "space_bash"}}, modernCall, pass, "2026-07-28"},
		{"2026-07-28 over HTTP, tool header differs", mcp.Session{Missing: true, Headers: &mcp.MethodHeaders{Method: "tools/call", Name: "space_ls"}}, modernCall, fmt.Sprint(mcp.CodeHeaderMismatch), "2026-07-28"},
		{"2025-11-25 over HTTP needs no method header", mcp.Session{Version: "2025-11-25", Headers: &mcp.MethodHeaders{}}, call, pass, "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, version := g.Check([]byte(tc.msg), tc.sess)
			if got := verdict(v); got != tc.want || version != tc.version {
				t.Fatalf("Check = %s (version %q), want %s (version %q); %s", got, version, tc.want, tc.version, respOf(v))
			}
			if tc.want != toolError {
				return
			}
			// A stateless-era client refuses a result that does not say it
			// is complete; the older ones have no such field.
			var resp struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			_ = json.Unmarshal(v.Response(), &resp)
			rt, has := resp.Result["resultType"]
			if mcp.IsModern(version) != has || (has && string(rt) != `"complete"`) {
				t.Fatalf("tool error of %s: %s", version, v.Response())
			}
		})
	}
}

func respOf(v *mcp.Violation) string {
	if v == nil {
		return "no answer"
	}
	var m map[string]any
	_ = json.Unmarshal(v.Response(), &m)
	b, _ := json.Marshal(m)
	return string(b)
}
