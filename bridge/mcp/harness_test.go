package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/mcp"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/tools"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/mcptest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// env is a real spacesd, registered as "s1" in a fresh registry, and a
// bridge serving streamable HTTP on loopback.
type env struct {
	daemon *spacesdtest.Daemon
	reg    *registry.Registry
	bridge *mcp.Bridge
	url    string // .../mcp
	token  string
	logs   *testenv.SyncBuffer
}

// envOptions adjust newEnvWith.
type envOptions struct {
	// clients is the registry's client factory (nil = the plain one).
	clients registry.ClientFactory
	// daemon adjusts the test spacesd.
	daemon spacesdtest.Options
	// roots are the host folders the tools may use; default the folder
	// holding every t.TempDir() of the test, the registry's home included
	// (as a user's home holds ~/.cua).
	roots []string
}

func newEnv(t testing.TB) *env { return newEnvWith(t, envOptions{}) }

func newEnvWith(t testing.TB, o envOptions) *env {
	t.Helper()
	d := spacesdtest.Start(t, o.daemon)
	home := t.TempDir()
	reg, err := registry.Open(home, registry.WithClients(o.clients))
	if err != nil {
		t.Fatal(err)
	}
	if o.roots == nil {
		o.roots = []string{filepath.Dir(home)}
	}
	host, err := hostfs.Confined(o.roots, hostfs.Deny{Path: home, What: "$CUA_HOME"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Add(context.Background(), "s1", d.URL, d.Token); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	b, err := mcp.New(mcp.Config{Deps: tools.NewDeps(reg, log, tools.WithHost(host)), Logger: log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close) // after the server stops, before the daemon does
	tok := spacesdtest.Token()
	addr, _ := testenv.Serve(t, func(ctx context.Context, ln net.Listener) error {
		return mcp.Serve(ctx, ln, b.HTTPHandler(mcp.HTTPOptions{Token: tok, Loopback: true}), log)
	})
	return &env{daemon: d, reg: reg, bridge: b, url: "http://" + addr + mcp.MCPPath, token: tok, logs: logs}
}

func (e *env) logText() string { return e.logs.String() }

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// client connects the official SDK client over streamable HTTP.
func (e *env) client(t testing.TB, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint:   e.url,
		HTTPClient: &http.Client{Transport: bearerRT{e.token}},
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// stdioClient connects the official SDK client to the bridge's stdio
// server (RunStdio), in process, over a pair of pipes.
func (e *env) stdioClient(t testing.TB) *sdk.ClientSession {
	t.Helper()
	fromBridge, toClient := io.Pipe()
	fromClient, toBridge := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.bridge.RunStdio(ctx, fromClient, toClient)
		toClient.Close()
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: fromBridge, Writer: toBridge}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect over stdio: %v", err)
	}
	t.Cleanup(func() { cs.Close(); toBridge.Close(); cancel(); <-done })
	return cs
}

func call(t testing.TB, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkOutput(t, name, res)
	checkKind(t, name, res)
	return res
}

// outputSchemas are the output schemas tools/list shows, resolved once.
var outputSchemas = sync.OnceValue(func() map[string]*jsonschema.Resolved {
	out := map[string]*jsonschema.Resolved{}
	for _, tool := range tools.All(nil) {
		if tool.Output == nil {
			continue
		}
		r, err := mcpserve.OutputSchema(tool).Resolve(nil)
		if err != nil {
			panic(fmt.Sprintf("%s: output schema: %v", tool.Name, err))
		}
		out[tool.Name] = r
	}
	return out
})

// checkOutput holds every answer of a tool with an output schema to it,
// failure or not: what tools/list promises is what a call answers.
func checkOutput(t testing.TB, name string, res *sdk.CallToolResult) {
	t.Helper()
	schema, ok := outputSchemas()[name]
	if !ok {
		return
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s has an output schema but answered no structured content: %+v", name, res)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(v); err != nil {
		t.Fatalf("%s answered structured content %s that its output schema refuses: %v", name, b, err)
	}
}

func text(r *sdk.CallToolResult) string { return mcptest.Text(r) }

// structured decodes structuredContent into v.
func structured(t testing.TB, r *sdk.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
}

// errKind returns structuredContent.error.kind of a failed call.
func errKind(t testing.TB, r *sdk.CallToolResult) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want isError, got %s", text(r))
	}
	var s struct {
		Error struct{ Kind, Message string }
	}
	structured(t, r, &s)
	if !strings.HasPrefix(text(r), "error: ") || s.Error.Message == "" {
		t.Fatalf("bad envelope: text %q, structured %+v", text(r), s)
	}
	return s.Error.Kind
}

// rawResp is one raw HTTP exchange with /mcp.
type rawResp struct {
	status  int
	header  http.Header
	message map[string]any // the JSON-RPC message (from JSON or the first SSE data line)
}

func (e *env) raw(t testing.TB, method, body string, hdr map[string]string) rawResp {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+e.token)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := rawResp{status: resp.StatusCode, header: resp.Header}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				_ = json.Unmarshal([]byte(d), &out.message)
				break
			}
		}
	} else {
		_ = json.Unmarshal(data, &out.message)
	}
	return out
}

// initialize opens a raw session and returns its id.
func (e *env) initialize(t testing.TB, version string) (string, rawResp) {
	t.Helper()
	r := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize %s: status %d, session %q, %v", version, r.status, sid, r.message)
	}
	res, _ := r.message["result"].(map[string]any)
	answered, _ := res["protocolVersion"].(string)
	n := e.raw(t, http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": answered})
	if n.status != http.StatusAccepted {
		t.Fatalf("initialized: status %d", n.status)
	}
	return sid, r
}

func rpcCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

// eventually polls cond until it holds or the test's deadline nears.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
