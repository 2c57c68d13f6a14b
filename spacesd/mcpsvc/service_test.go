package mcpsvc_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/mcptest"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

func TestMain(m *testing.M) {
	mcptest.Main()
	goleak.VerifyTestMain(m)
}

// env is a test daemon with declared services, and its log.
type env struct {
	d    *spacesdtest.Daemon
	dir  string // the test server's marks
	logs *spacesdtest.Logs
}

// service declares the test server as a service named name in mode.
func service(name, mode, dir string, adjust ...func(*mcpsvc.ServiceConfig)) mcpsvc.ServiceConfig {
	c := mcpsvc.ServiceConfig{
		Name: name, Transport: mcpsvc.TransportStdio, Command: mcptest.Command(), Env: mcptest.Env(mode, dir),
		InitTimeout: mcpsvc.DefaultInitTimeout, IdleTimeout: mcpsvc.DefaultIdleTimeout,
	}
	for _, f := range adjust {
		f(&c)
	}
	return c
}

func newEnv(t *testing.T, services ...mcpsvc.ServiceConfig) *env {
	t.Helper()
	e := &env{dir: t.TempDir(), logs: &spacesdtest.Logs{}}
	for i := range services {
		if services[i].Env[mcptest.EnvDir] == "" && services[i].Env != nil {
			services[i].Env[mcptest.EnvDir] = e.dir
		}
	}
	e.d = spacesdtest.Start(t, spacesdtest.Options{
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		MCP:    mcpsvc.Options{Config: &mcpsvc.Config{Services: services}},
	})
	return e
}

// client connects the Go SDK's client to the daemon's /mcp with the token.
func (e *env) client(t *testing.T, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return e.d.MCPClient(t, opts)
}

// call calls a tool and fails the test on a transport error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func kindOf(r *sdk.CallToolResult) string {
	b, _ := json.Marshal(r.StructuredContent)
	var env mcpserve.ErrorEnvelope
	_ = json.Unmarshal(b, &env)
	return env.Error.Kind
}

// eventually polls cond until it holds or a minute passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The daemon serves the bridge's Space tools without the space argument:
// the same titles, hints and schemas, and a call works on the daemon itself.
func TestBuiltinService(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	listed, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*sdk.Tool{}
	for _, tl := range listed.Tools {
		got[tl.Name] = tl
	}
	for _, def := range spacetools.All() {
		tl, ok := got[def.Name]
		if !ok {
			t.Errorf("%s is not served", def.Name)
			continue
		}
		want, _ := json.Marshal(mcpserve.Describe(spacetools.Surface{}.Serve(def)))
		have, _ := json.Marshal(tl)
		var w, h any
		_ = json.Unmarshal(want, &w)
		_ = json.Unmarshal(have, &h)
		if !reflect.DeepEqual(w, h) {
			t.Errorf("%s is served as %s\nwant %s", def.Name, have, want)
		}
		if _, has := tl.InputSchema.(map[string]any)["properties"].(map[string]any)["space"]; has {
			t.Errorf("%s takes a space argument in the daemon", def.Name)
		}
	}
	if len(got) != len(spacetools.All()) {
		t.Errorf("%d tools served, want %d", len(got), len(spacetools.All()))
	}
	res := call(t, cs, "space_bash", map[string]any{"command": "echo in-space; echo oops >&2; exit 3"})
	var bash spacetools.BashResult
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &bash)
	if res.IsError || bash.Stdout != "in-space\n" || bash.Stderr != "oops\n" || bash.ExitCode != 3 {
		t.Fatalf("space_bash: %+v %s", res, b)
	}
	// The built-in service answers through call_tool too.
	res = call(t, cs, "call_tool", map[string]any{"tool": "space_bash", "arguments": map[string]any{"command": "echo via call_tool"}})
	if res.IsError || !strings.Contains(mcptest.Text(res), "via call_tool") {
		t.Fatalf("call_tool spacesd space_bash: %+v", res)
	}
	// call_tool does not call itself (a chain of them would recurse as
	// deep as its arguments nest).
	res = call(t, cs, "call_tool", map[string]any{"tool": "call_tool", "arguments": map[string]any{"tool": "space_bash"}})
	if !res.IsError || kindOf(res) != string(api.KindInvalidArgument) {
		t.Fatalf("call_tool of call_tool: %+v", res)
	}
	// A tool needing a feature the daemon lacks (no display) says so.
	res = call(t, cs, "space_screenshot", nil)
	if !res.IsError || kindOf(res) != string(api.KindCapabilityMissing) {
		t.Fatalf("space_screenshot without a display: %+v", res)
	}
}

// Without the token, /mcp answers 401 like every route; a ticket is no
// token here either.
func TestMCPNeedsTheToken(t *testing.T) {
	e := newEnv(t)
	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest(http.MethodPost, e.d.URL+api.PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST /mcp with %q: %d, want 401", auth, resp.StatusCode)
		}
	}
}

// Every part of a service's result passes through call_tool as the
// service sent it: text, image, audio, resource and link parts,
// structuredContent (its large integer and key order) and isError.
func TestCallToolPassesResultsThrough(t *testing.T) {
	e := newEnv(t, service("test", mcptest.ModeServe, ""))
	cs := e.client(t, nil)
	mcptest.CheckParts(t, rawCall(t, e, "parts"))
	res := call(t, cs, "call_tool", map[string]any{"service": "test", "tool": "fail"})
	if !res.IsError || mcptest.Text(res) != "it failed on purpose" || !reflect.DeepEqual(res.StructuredContent, map[string]any{"reason": "on purpose"}) {
		t.Fatalf("fail: %+v", res)
	}
}

// post sends one JSON-RPC message to /mcp over plain HTTP, in the session
// sid ("" for none), and answers the status, the session id and the body.
func (e *env) post(t *testing.T, token, sid, body string) (int, string, []byte) {
	t.Helper()
	return mcptest.Post(t, e.d.URL+api.PathMCP, token, sid, []byte(body))
}

// initialize opens a 2025-06-18 session over plain HTTP.
func (e *env) initialize(t *testing.T, token string) string {
	t.Helper()
	status, sid, body := e.post(t, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	e.post(t, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// rawCall calls call_tool of the test service over plain HTTP and answers
// the result's bytes as the daemon sent them.
func rawCall(t *testing.T, e *env, tool string) json.RawMessage {
	t.Helper()
	return rawCallService(t, e, "test", tool)
}

// rawCallService is rawCall of a tool of service.
func rawCallService(t *testing.T, e *env, service, tool string) json.RawMessage {
	t.Helper()
	return mcptest.RawCall(t, e.d.URL+api.PathMCP, e.d.Token, e.initialize(t, e.d.Token), "call_tool", map[string]any{"service": service, "tool": tool})
}

// A service killed in the middle of a call fails that call with kind mcp
// (saying how it ended), and the next call starts it again.
func TestCrashedServiceRestarts(t *testing.T) {
	e := newEnv(t, service("test", mcptest.ModeServe, ""))
	cs := e.client(t, nil)
	if res := call(t, cs, "call_tool", map[string]any{"service": "test", "tool": "echo", "arguments": map[string]any{"text": "one"}}); mcptest.Text(res) != "one" {
		t.Fatalf("echo: %+v", res)
	}
	res := call(t, cs, "call_tool", map[string]any{"service": "test", "tool": "crash"})
	if !res.IsError || kindOf(res) != string(api.KindMCP) || !strings.Contains(mcptest.Text(res), "exited with status 3") ||
		!strings.Contains(mcptest.Text(res), "crashing on purpose") {
		t.Fatalf("crash: %+v", res)
	}
	if res := call(t, cs, "call_tool", map[string]any{"service": "test", "tool": "echo", "arguments": map[string]any{"text": "two"}}); mcptest.Text(res) != "two" {
		t.Fatalf("echo after the crash: %+v", res)
	}
	list := listTools(t, cs, "test", "")
	if s := list.Services[1]; s.Name != "test" || s.State != "running" || s.Restarts != 1 {
		t.Fatalf("services after a restart: %+v", list.Services)
	}
}

func listTools(t *testing.T, cs *sdk.ClientSession, service, name string) spacetools.ToolList {
	t.Helper()
	res := call(t, cs, "list_tools", map[string]any{"service": service, "name": name})
	if res.IsError {
		t.Fatalf("list_tools: %s", mcptest.Text(res))
	}
	var l spacetools.ToolList
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestListTools(t *testing.T) {
	e := newEnv(t, service("test", mcptest.ModeServe, ""))
	cs := e.client(t, nil)
	l := listTools(t, cs, "test", "")
	if l.Service != "test" || l.Count != 6 || l.Tools[0].Name != "crash" || l.Tools[0].InputSchema != nil {
		t.Fatalf("list: %+v", l)
	}
	if len(l.Services) != 2 || l.Services[0].Name != "spacesd" || l.Services[1].Transport != "stdio" {
		t.Fatalf("services: %+v", l.Services)
	}
	l = listTools(t, cs, "test", "ech")
	if l.Count != 1 || l.Tools[0].Name != "echo" || l.Tools[0].InputSchema["type"] != "object" {
		t.Fatalf("list by name: %+v", l)
	}
	l = listTools(t, cs, "spacesd", "bash")
	if l.Count != 1 || l.Tools[0].Name != "space_bash" || l.Tools[0].Title != "Run a shell command" || l.Tools[0].InputSchema == nil {
		t.Fatalf("built-in list by name: %+v", l)
	}
	res := call(t, cs, "list_tools", map[string]any{"service": "nope"})
	if !res.IsError || kindOf(res) != string(api.KindNotFound) || !strings.Contains(mcptest.Text(res), "spacesd, test") {
		t.Fatalf("unknown service: %+v", res)
	}
}

// A service that never answers initialize, or exits at once, fails the
// call within its bound with kind mcp and a message that says which.
func TestServiceThatNeverStarts(t *testing.T) {
	short := func(c *mcpsvc.ServiceConfig) { c.InitTimeout = 500 * time.Millisecond }
	e := newEnv(t, service("mute", mcptest.ModeMute, "", short), service("gone", mcptest.ModeExit, "", short))
	cs := e.client(t, nil)
	for name, want := range map[string]string{
		"mute": "did not answer initialize within 500ms",
		"gone": "exited with status 7 before answering initialize; its stderr ends: mcptest: exiting at once, on purpose",
	} {
		res := call(t, cs, "call_tool", map[string]any{"service": name, "tool": "echo"})
		if !res.IsError || kindOf(res) != string(api.KindMCP) || !strings.Contains(mcptest.Text(res), want) {
			t.Errorf("%s: %s, want kind mcp saying %q", name, mcptest.Text(res), want)
		}
	}
	l := listTools(t, cs, "spacesd", "none")
	for _, s := range l.Services[1:] {
		if s.State != "failed" || s.Error == "" {
			t.Errorf("service %+v, want failed with its error", s)
		}
	}
}

// Progress of a service reaches the caller; cancelling the call stops it
// inside the service.
func TestProgressAndCancel(t *testing.T) {
	e := newEnv(t, service("test", mcptest.ModeServe, ""))
	mcptest.ProgressAndCancel(t, e.dir, func(o *sdk.ClientOptions) *sdk.ClientSession { return e.client(t, o) },
		func(slow map[string]any) *sdk.CallToolParams {
			return &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"service": "test", "tool": "slow", "arguments": slow}}
		})
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// A service's stderr is in the daemon's log under its name; its process
// is one of the daemon's, tagged with its name; idle, it is stopped, and
// the next call starts it again.
func TestStderrProcessAndIdle(t *testing.T) {
	e := newEnv(t, service("test", mcptest.ModeServe, "", func(c *mcpsvc.ServiceConfig) { c.IdleTimeout = 300 * time.Millisecond }))
	cs := e.client(t, nil)
	res := call(t, cs, "call_tool", map[string]any{"service": "test", "tool": "stderr", "arguments": map[string]any{"line": "a line for the log"}})
	if res.IsError {
		t.Fatalf("stderr: %s", mcptest.Text(res))
	}
	eventually(t, "the line in the daemon's log", func() bool {
		for _, l := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(l, `"mcp_service":"test"`) && strings.Contains(l, `"line":"a line for the log"`) {
				return true
			}
		}
		return false
	})
	procs, err := e.d.Client.Processes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, p := range procs {
		if p.Tag == "mcp:test" && p.State == api.StateRunning {
			pid = p.PID
		}
	}
	if pid == 0 {
		t.Fatalf("no running process tagged mcp:test in %+v", procs)
	}
	eventually(t, "the idle service stops", func() bool {
		procs, _ := e.d.Client.Processes(t.Context())
		for _, p := range procs {
			if p.PID == pid && p.State == api.StateExited {
				return true
			}
		}
		return false
	})
	if res := call(t, cs, "call_tool", map[string]any{"service": "test", "tool": "echo", "arguments": map[string]any{"text": "back"}}); mcptest.Text(res) != "back" {
		t.Fatalf("echo after the idle stop: %+v", res)
	}
	if l := listTools(t, cs, "test", "none"); l.Services[1].Restarts != 0 {
		t.Fatalf("an idle stop counted as a restart: %+v", l.Services[1])
	}
}

// Rotating the token ends the MCP sessions opened with the old one: the
// session's id answers 404, even with the new token, and a new session
// works.
func TestRotationEndsSessions(t *testing.T) {
	old := spacesdtest.Token()
	auth := server.NewAuth(old, nil)
	e := &env{d: spacesdtest.Start(t, spacesdtest.Options{Auth: auth})}
	sid := e.initialize(t, old)
	ping := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	if status, _, body := e.post(t, old, sid, ping); status != http.StatusOK {
		t.Fatalf("ping: %d %s", status, body)
	}
	fresh := spacesdtest.Token()
	auth.Rotate(fresh)
	if status, _, body := e.post(t, fresh, sid, ping); status != http.StatusNotFound {
		t.Fatalf("a session of the old token, with the new one: %d %s, want 404", status, body)
	}
	if status, _, body := e.post(t, fresh, e.initialize(t, fresh), ping); status != http.StatusOK {
		t.Fatalf("ping in a new session: %d %s", status, body)
	}
}

// A streamable-HTTP service on loopback is reached as a stdio one is: its
// tools are listed, and its results pass through unchanged, the headers
// the file gives it carried on every request.
func TestHTTPService(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcptest.Server() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, mcpsvc.ServiceConfig{
		Name: "web", Transport: mcpsvc.TransportHTTP, URL: srv.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer service-own"},
		InitTimeout: mcpsvc.DefaultInitTimeout, IdleTimeout: mcpsvc.DefaultIdleTimeout,
	})
	cs := e.client(t, nil)
	if l := listTools(t, cs, "web", ""); l.Count != 6 || l.Services[1].Transport != "http" || l.Services[1].State != "running" {
		t.Fatalf("list: %+v", l)
	}
	mcptest.CheckParts(t, rawCallService(t, e, "web", "parts"))
	mu.Lock()
	defer mu.Unlock()
	for _, a := range auth {
		if a != "Bearer service-own" {
			t.Fatalf("a request to the service carried Authorization %q, want the file's own (never the daemon's token)", a)
		}
	}
}

// A call in flight to a service does not hold the daemon's shutdown: the
// service is stopped, which ends the call, and then its session. (Ending
// the sessions first waited for the call for ever: this test then hung
// in the daemon's cleanup.) The client here never cancels or leaves.
func TestShutdownWithCallInFlight(t *testing.T) {
	// Registered before the daemon's cleanup, so it runs after it: the
	// call is answered (cut) once the daemon has stopped.
	answered := make(chan struct{})
	sent := false
	t.Cleanup(func() {
		if sent {
			<-answered
		}
	})
	e := newEnv(t, service("test", mcptest.ModeServe, ""))
	sid := e.initialize(t, e.d.Token)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"service":"test","tool":"slow","arguments":{"steps":100000}}}}`
	req, _ := http.NewRequest(http.MethodPost, e.d.URL+api.PathMCP, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+e.d.Token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	sent = true
	go func() {
		defer close(answered)
		// The daemon's end cuts this request; its error is expected.
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	eventually(t, "slow starts", func() bool { return exists(filepath.Join(e.dir, mcptest.Started)) })
}

// A client's standalone SSE stream (GET /mcp), which MCP clients hold open
// for good, ends when the daemon's shutdown starts: it held the graceful
// shutdown to its timeout before ("graceful shutdown ran out of time").
func TestShutdownEndsStandaloneStream(t *testing.T) {
	logs := &spacesdtest.Logs{}
	streamEnded := make(chan struct{})
	opened := false
	// Registered before the daemon's cleanup, so it runs after it.
	t.Cleanup(func() {
		if !opened {
			return
		}
		<-streamEnded
		if strings.Contains(logs.String(), "ran out of time") {
			t.Errorf("the shutdown waited for the MCP stream:\n%s", logs.String())
		}
	})
	e := &env{logs: logs}
	e.d = spacesdtest.Start(t, spacesdtest.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	sid := e.initialize(t, e.d.Token)
	req, _ := http.NewRequest(http.MethodGet, e.d.URL+api.PathMCP, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+e.d.Token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp: %d", resp.StatusCode)
	}
	opened = true
	go func() {
		defer close(streamEnded)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
}

// Calls that come while a service starts wait for that start, and share
// its failure: the service is started once, not once per waiting call
// (each of which would then wait out the bound again, in turn).
func TestCallsShareAFailedStart(t *testing.T) {
	e := newEnv(t, service("mute", mcptest.ModeMute, "", func(c *mcpsvc.ServiceConfig) { c.InitTimeout = 5 * time.Second }))
	cs := e.client(t, nil)
	const calls = 3
	errs := make(chan string, calls)
	callMute := func() {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"service": "mute", "tool": "echo"}})
		switch {
		case err != nil:
			errs <- err.Error()
		case !res.IsError || kindOf(res) != string(api.KindMCP):
			errs <- "not kind mcp: " + mcptest.Text(res)
		default:
			errs <- ""
		}
	}
	starts := func() (n int) {
		procs, err := e.d.Client.Processes(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			if p.Tag == "mcp:mute" {
				n++
			}
		}
		return n
	}
	go callMute()
	eventually(t, "the service starts", func() bool { return starts() == 1 })
	for range calls - 1 {
		go callMute()
	}
	for range calls {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
	if n := starts(); n != 1 {
		t.Fatalf("the service was started %d times for %d calls during one start", n, calls)
	}
}
