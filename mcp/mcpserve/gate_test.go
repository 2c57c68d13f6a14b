package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	mcp "github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// newServer serves the tools over one Space as the bridge does (each takes
// a space argument), over a Space that is never found: the gate's checks
// need real schemas, and a call that passes it answers a tool error.
func newServer(t testing.TB) *mcp.Server {
	t.Helper()
	surface := spacetools.Surface{
		SpaceArg: spacetools.NonEmpty("The Space."),
		Space: func(context.Context, *mcp.Call, []api.Feature) (*spacetools.Space, error) {
			return nil, api.Errorf(api.KindNotFound, "no Space here")
		},
	}
	s, err := mcp.New(mcp.Config{Name: "test", Tools: surface.ServeAll(spacetools.All())})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newGate(t testing.TB) *mcp.Gate { return newServer(t).Gate() }

var gateSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s","command":"true"}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s","command":1}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[]}`,
	`{"jsonrpc":"2.0","id":5,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"x/y"}`,
	`{"jsonrpc":`,
	`"just a string"`,
	``,
	`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
	// The SDK and the tools read keys exactly or case-insensitively: a key
	// differing only in case must not let the gate check one value while
	// another one runs.
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","Name":"space_bash","arguments":{"space":"s","command":"true"}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s","command":1},"Arguments":{"space":"s","command":"true"}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s","command":"true","COMMAND":"rm -rf ~"}}}`,
	`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"s","Space":"other","command":"true"}}}`,
}

// FuzzGate: the gate never panics, and whatever it lets through is one
// JSON object with jsonrpc "2.0"; whatever it refuses gets a valid answer,
// on every revision, with a session or without.
func FuzzGate(f *testing.F) {
	for _, s := range append(gateSeeds, modernSeeds...) {
		for _, v := range append(mcp.ProtocolVersions, "") {
			f.Add([]byte(s), false, v, "", "")
			f.Add([]byte(s), true, v, "tools/call", "space_bash")
		}
	}
	g := newGate(f)
	f.Fuzz(func(t *testing.T, msg []byte, missing bool, version, method, name string) {
		sess := mcp.Session{Version: version, Missing: missing}
		if method != "" || name != "" {
			sess.Headers = &mcp.MethodHeaders{Method: method, Name: name}
		}
		v, _ := g.Check(msg, sess)
		if v == nil {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(msg, &m); err != nil {
				t.Fatalf("passed a non-object %q: %v", msg, err)
			}
			if string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("passed without jsonrpc 2.0: %q", msg)
			}
			return
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct{ Code int }
			Result  struct {
				IsError           bool `json:"isError"`
				StructuredContent struct {
					Error struct{ Kind string }
				} `json:"structuredContent"`
			}
		}
		if err := json.Unmarshal(v.Response(), &resp); err != nil || resp.JSONRPC != "2.0" {
			t.Fatalf("bad answer %s: %v", v.Response(), err)
		}
		if v.ToolError {
			if !resp.Result.IsError || resp.Result.StructuredContent.Error.Kind != "invalid_argument" {
				t.Fatalf("bad tool error %s", v.Response())
			}
			return
		}
		if resp.Error.Code != v.Code {
			t.Fatalf("bad answer %s", v.Response())
		}
		switch v.Code {
		case mcp.CodeParseError, mcp.CodeInvalidRequest, mcp.CodeMethodNotFound, mcp.CodeInvalidParams, mcp.CodeHeaderMismatch:
		default:
			t.Fatalf("unexpected code %d", v.Code)
		}
	})
}

func TestGateCodes(t *testing.T) {
	g := newGate(t)
	for _, tc := range []struct {
		msg  string
		want int // 0 = passes
	}{
		{gateSeeds[0], 0},
		{gateSeeds[1], 0},
		{gateSeeds[2], 0},
		{gateSeeds[3], mcp.CodeInvalidParams},
		{gateSeeds[4], mcp.CodeMethodNotFound},
		{gateSeeds[5], mcp.CodeInvalidParams},
		{gateSeeds[6], 0},
		{gateSeeds[7], mcp.CodeInvalidRequest},
		{gateSeeds[8], mcp.CodeInvalidRequest},
		{gateSeeds[9], mcp.CodeMethodNotFound},
		{gateSeeds[10], mcp.CodeParseError},
		{gateSeeds[11], mcp.CodeInvalidRequest},
		{gateSeeds[12], mcp.CodeParseError},
		{gateSeeds[13], mcp.CodeInvalidRequest},
		{gateSeeds[14], mcp.CodeMethodNotFound},
		{gateSeeds[15], mcp.CodeInvalidParams},
		{gateSeeds[16], mcp.CodeInvalidParams},
		{gateSeeds[17], mcp.CodeInvalidParams},
	} {
		v, _ := g.Check([]byte(tc.msg), mcp.Session{})
		got := 0
		if v != nil {
			got = v.Code
		}
		if got != tc.want {
			t.Errorf("Check(%s) = %d, want %d", tc.msg, got, tc.want)
		}
	}
}

// TestStdio runs the same gate over the stdio transport: refused lines are
// answered by the gate, the rest by the SDK, and a closed stdin still gets
// the answers of what was asked.
func TestStdio(t *testing.T) {
	b := newServer(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
		`[1,2]`,
		`{"jsonrpc":"2.0","id":2,"method":"nope"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ghost","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"space_read","arguments":{"space":"x","path":7}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"space_bash","arguments":{"space":"x","command":"true"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"` + strings.Repeat("a", mcp.MaxMessageBytes) + `"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := b.RunStdio(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	var nullIDs []int
	dec := json.NewDecoder(&out)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m["id"] == nil {
			nullIDs = append(nullIDs, rpcCode(m))
			continue
		}
		id, _ := json.Marshal(m["id"])
		byID[string(id)] = m
	}
	if res, _ := byID["1"]["result"].(map[string]any); res["protocolVersion"] != "2024-11-05" {
		t.Fatalf("initialize: %v", byID["1"])
	}
	for id, want := range map[string]int{"2": -32601, "3": -32601, "4": -32602} {
		if got := rpcCode(byID[id]); got != want {
			t.Errorf("id %s: code %d, want %d (%v)", id, got, want, byID[id])
		}
	}
	if res, _ := byID["5"]["result"].(map[string]any); res["isError"] != true {
		t.Errorf("space_bash on an unknown Space: %v", byID["5"])
	}
	if byID["7"]["result"] == nil {
		t.Errorf("tools/list: %v", byID["7"])
	}
	if want := []int{-32700, -32600, -32600}; len(nullIDs) != 3 || nullIDs[0] != want[0] || nullIDs[1] != want[1] || nullIDs[2] != want[2] {
		t.Errorf("id-less answers %v, want %v", nullIDs, want)
	}
}

// rpcCode is the JSON-RPC error code of a decoded answer (0: none).
func rpcCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}
