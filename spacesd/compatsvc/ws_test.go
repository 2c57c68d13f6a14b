package compatsvc_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// liveness bounds a wait for an answer that must come: generous for a
// loaded machine, no performance claim.
const liveness = time.Minute

// bus is a test client of GET /ws speaking raw JSON, as the published
// clients do.
type bus struct {
	t  testing.TB
	ws *websocket.Conn
}

func wsURL(d *spacesdtest.Daemon) string { return "ws" + strings.TrimPrefix(d.URL, "http") + "/ws" }

func dialBus(t testing.TB, url string, h http.Header) *bus {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", url, err, resp)
	}
	t.Cleanup(func() { ws.Close() })
	return &bus{t: t, ws: ws}
}

// send sends one raw message and reads one answer.
func (b *bus) send(raw string) map[string]any {
	b.t.Helper()
	if err := b.ws.WriteMessage(websocket.TextMessage, []byte(raw)); err != nil {
		b.t.Fatalf("send %.80s: %v", raw, err)
	}
	return b.read()
}

func (b *bus) read() map[string]any {
	b.t.Helper()
	_ = b.ws.SetReadDeadline(time.Now().Add(liveness))
	_, msg, err := b.ws.ReadMessage()
	if err != nil {
		b.t.Fatalf("read an answer: %v", err)
	}
	var out map[string]any
	if err := json.Unmarshal(msg, &out); err != nil {
		b.t.Fatalf("answer %.200s is no JSON object: %v", msg, err)
	}
	return out
}

// call sends {"command", "params"} and reads the answer.
func (b *bus) call(cmd string, params any) map[string]any {
	b.t.Helper()
	msg, _ := json.Marshal(map[string]any{"command": cmd, "params": params})
	return b.send(string(msg))
}

// ok calls and fails the test unless the command succeeded.
func (b *bus) ok(cmd string, params any) map[string]any {
	b.t.Helper()
	res := b.call(cmd, params)
	if res["success"] != true {
		b.t.Fatalf("%s %v: %v", cmd, params, res)
	}
	return res
}

// fails calls and fails the test unless the command failed with an error
// holding want.
func (b *bus) fails(cmd string, params any, want string) map[string]any {
	b.t.Helper()
	res := b.call(cmd, params)
	if res["success"] != false || !strings.Contains(str(res["error"]), want) {
		b.t.Fatalf("%s %v = %v, want success false with %q", cmd, params, res, want)
	}
	return res
}

func str(v any) string { s, _ := v.(string); return s }

// closed reports whether the daemon closed the connection (within liveness).
func (b *bus) closed() (int, bool) {
	_ = b.ws.SetReadDeadline(time.Now().Add(liveness))
	_, _, err := b.ws.ReadMessage()
	if ce, ok := err.(*websocket.CloseError); ok {
		return ce.Code, true
	}
	return 0, err != nil
}

// cmd posts one command to POST /cmd and returns the status and the
// decoded data line.
func cmd(t *testing.T, d *spacesdtest.Daemon, h http.Header, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.URL+"/cmd", strings.NewReader(body))
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	line, ok := strings.CutPrefix(string(b), "data: ")
	if !ok || !strings.HasSuffix(line, "\n\n") {
		return resp.StatusCode, nil
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(line), &out); err != nil {
		t.Fatalf("POST /cmd answered %q: %v", b, err)
	}
	return resp.StatusCode, out
}

// Malformed messages, unknown commands and params of the wrong type are
// each answered success false with a clear error, over /ws and /cmd, and
// the connection and the daemon stay up; answers come in the order the commands were sent.
func TestBusRobustness(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	b := dialBus(t, wsURL(d), http.Header{server.HeaderAPIKey: {d.Token}, "X-VM-Name": {"any"}})
	for raw, want := range map[string]string{
		`not json`:                               "not valid JSON",
		`[]`:                                     "not an object",
		`{"params":{}}`:                          "names no command",
		`{"command":42}`:                         "command must be a string",
		`{"command":"run_command","params":[1]}`: "must be a JSON object",
		`{"command":"screenshoot"}`:              "Did you mean: screenshot",
		`{"command":"run_command","params":{}}`:  "missing the parameter command",
		`{"command":"move_cursor","params":{"x":"1","y":2}}`: "parameter x: want a number, got string",
		`{"command":"scroll_up","params":{"clicks":"many"}}`: "parameter clicks: want an integer",
	} {
		res := b.send(raw)
		if res["success"] != false || !strings.Contains(str(res["error"]), want) || res["kind"] != "invalid_argument" {
			t.Errorf("%s = %v, want success false, invalid_argument, %q", raw, res, want)
		}
		// POST /cmd answers the same, with a 400.
		status, res := cmd(t, d, http.Header{server.HeaderAPIKey: {d.Token}}, raw)
		if status != http.StatusBadRequest || res["success"] != false || !strings.Contains(str(res["error"]), want) || res["kind"] != "invalid_argument" {
			t.Errorf("POST /cmd %s = %d %v, want 400, success false, invalid_argument, %q", raw, status, res, want)
		}
	}
	// A binary frame is read as a text one.
	if err := b.ws.WriteMessage(websocket.BinaryMessage, []byte(`{"command":"version"}`)); err != nil {
		t.Fatal(err)
	}
	if res := b.read(); res["success"] != true || res["protocol"] != float64(1) {
		t.Fatalf("version in a binary frame: %v", res)
	}

	// In order: a slow command sent first is answered first.
	for _, c := range []string{"sleep 0.3; echo first", "echo second", "echo third"} {
		msg, _ := json.Marshal(map[string]any{"command": "run_command", "params": map[string]any{"command": c}})
		if err := b.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"first\n", "second\n", "third\n"} {
		if res := b.read(); res["stdout"] != want {
			t.Fatalf("answer %v, want stdout %q (in order)", res, want)
		}
	}
	if _, err := d.Client.Health(t.Context()); err != nil {
		t.Fatalf("the daemon after bad messages: %v", err)
	}
}

func TestRunCommand(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{NoToken: true})
	b := dialBus(t, wsURL(d), nil)
	res := b.ok("run_command", map[string]any{"command": "echo out; echo err >&2; exit 3"})
	if res["stdout"] != "out\n" || res["stderr"] != "err\n" || res["return_code"] != float64(3) {
		t.Fatalf("run_command = %v", res)
	}
	res = b.ok("shell", map[string]any{"command": "kill -TERM $$"})
	if res["return_code"] != float64(-15) {
		t.Fatalf("a command killed by SIGTERM: %v, want return_code -15 as Python reports it", res)
	}
	res = b.fails("run_command", map[string]any{"command": "echo started; exec sleep 30", "timeout": 0.2}, "timed out")
	if res["kind"] != "timeout" || res["return_code"] != float64(-1) || res["stdout"] != "started\n" {
		t.Fatalf("a command past its timeout: %v", res)
	}
	b.fails("run_command", map[string]any{"command": "true", "timeout": -1}, "out of range")
}

// The file commands, on the daemon's files capability: byte-exact round
// trips, chunks appended, existence, listing, removal, and paths read from
// the daemon user's home when relative, as computer-server read them.
func TestBusFiles(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	d := spacesdtest.Start(t, spacesdtest.Options{NoToken: true})
	b := dialBus(t, wsURL(d), nil)
	dir := filepath.Join(home, "work")
	b.ok("create_dir", map[string]any{"path": "~/work/sub"})
	b.ok("create_dir", map[string]any{"path": "work/sub"}) // existing is fine
	if res := b.ok("directory_exists", map[string]any{"path": dir + "/sub"}); res["exists"] != true {
		t.Fatalf("directory_exists: %v", res)
	}

	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	p := filepath.Join(dir, "blob")
	for off := 0; off < len(data); off += 1 << 20 {
		chunk := data[off:min(off+1<<20, len(data))]
		b.ok("write_bytes", map[string]any{"path": p, "content_b64": base64.StdEncoding.EncodeToString(chunk), "append": off > 0})
	}
	if got, _ := os.ReadFile(p); string(got) != string(data) {
		t.Fatalf("the chunked write left %d bytes, not the %d sent", len(got), len(data))
	}
	if res := b.ok("get_file_size", map[string]any{"path": "work/blob"}); res["size"] != float64(len(data)) {
		t.Fatalf("get_file_size: %v", res)
	}
	var back []byte
	for off := 0; off < len(data); off += 1 << 20 {
		res := b.ok("read_bytes", map[string]any{"path": p, "offset": off, "length": 1 << 20})
		chunk, err := base64.StdEncoding.DecodeString(str(res["content_b64"]))
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, chunk...)
	}
	if string(back) != string(data) {
		t.Fatalf("read back %d bytes, not the same as the %d written", len(back), len(data))
	}
	if res := b.ok("read_bytes", map[string]any{"path": p, "offset": len(data) + 5}); res["content_b64"] != "" {
		t.Fatalf("a read past the end: %v, want nothing", res)
	}

	b.ok("write_text", map[string]any{"path": "~/work/t.txt", "content": "Привет ✓\n"})
	if res := b.ok("read_text", map[string]any{"path": dir + "/t.txt"}); res["content"] != "Привет ✓\n" {
		t.Fatalf("read_text: %v", res)
	}
	b.fails("read_text", map[string]any{"path": p}, "not UTF-8 text")
	if res := b.ok("file_exists", map[string]any{"path": p}); res["exists"] != true {
		t.Fatalf("file_exists: %v", res)
	}
	if res := b.ok("file_exists", map[string]any{"path": dir + "/none"}); res["exists"] != false {
		t.Fatalf("file_exists of nothing: %v", res)
	}
	if res := b.ok("file_exists", map[string]any{"path": dir}); res["exists"] != false {
		t.Fatalf("file_exists of a directory: %v", res)
	}
	res := b.ok("list_dir", map[string]any{"path": dir})
	if got, _ := json.Marshal(res["files"]); string(got) != `["blob","sub","t.txt"]` {
		t.Fatalf("list_dir: %v", res)
	}
	b.fails("delete_file", map[string]any{"path": dir + "/sub"}, "use delete_dir")
	b.fails("delete_dir", map[string]any{"path": p}, "use delete_file")
	b.ok("delete_file", map[string]any{"path": p})
	b.ok("rm", map[string]any{"path": "work/t.txt"})
	b.ok("delete_dir", map[string]any{"path": dir + "/sub"})
	b.fails("delete_dir", map[string]any{"path": home}, "directory not empty")
	b.fails("read_bytes", map[string]any{"path": dir + "/missing"}, "no such file")
	b.fails("write_text", map[string]any{"path": "../escape", "content": "x"}, `".." element`)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// With a token: the key on the upgrade, or the first message, and nothing
// else; /cmd and /status take the key as a header. A wrong key is refused
// everywhere, before any command runs, and never logged.
func TestBusAuth(t *testing.T) {
	var logs spacesdtest.Logs
	d := spacesdtest.Start(t, spacesdtest.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	const wrong = "the-wrong-key-of-this-test"
	marker := filepath.Join(t.TempDir(), "ran")
	touch, _ := json.Marshal(map[string]any{"command": "run_command", "params": map[string]any{"command": "touch " + marker}})

	// A wrong key on the upgrade: 401 before the WebSocket.
	for name, h := range map[string]http.Header{
		"X-API-Key": {server.HeaderAPIKey: {wrong}, "X-VM-Name": {"vm"}},
		"bearer":    {"Authorization": {"Bearer " + wrong}},
	} {
		_, resp, err := websocket.DefaultDialer.Dial(wsURL(d), h)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("upgrade with a wrong %s: %v %v, want 401", name, err, resp)
		}
	}
	// No credentials: a wrong authenticate message, or a command first,
	// is answered success false and the connection closed.
	for name, first := range map[string]string{
		"wrong key":     `{"command":"authenticate","params":{"api_key":"` + wrong + `","container_name":"vm"}}`,
		"command first": string(touch),
		"no key":        `{"command":"authenticate","params":{}}`,
		"not json":      `{{{`,
	} {
		b := dialBus(t, wsURL(d), nil)
		if err := b.ws.WriteMessage(websocket.TextMessage, []byte(first)); err != nil {
			t.Fatal(err)
		}
		_ = b.ws.WriteMessage(websocket.TextMessage, touch) // must never run
		res := b.read()
		if res["success"] != false || res["kind"] != "unauthenticated" {
			t.Errorf("%s: %v, want success false, unauthenticated", name, res)
		}
		if code, closed := b.closed(); !closed || code != websocket.ClosePolicyViolation {
			t.Errorf("%s: the connection was not closed (1008): %d %v", name, code, closed)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a command ran before the client authenticated")
	}

	// The right key in band, then the clients' usual second authenticate.
	b := dialBus(t, wsURL(d), nil)
	res := b.send(`{"command":"authenticate","params":{"api_key":"` + d.Token + `","container_name":"vm"}}`)
	if res["success"] != true || res["message"] != "Authentication successful" {
		t.Fatalf("authenticate: %v", res)
	}
	b.ok("authenticate", map[string]any{"api_key": d.Token})
	b.fails("authenticate", map[string]any{"api_key": wrong}, "Authentication failed")
	b.ok("run_command", map[string]any{"command": "true"})

	// The key on the upgrade: commands at once.
	b = dialBus(t, wsURL(d), http.Header{server.HeaderAPIKey: {d.Token}, "X-VM-Name": {"vm"}})
	b.ok("version", nil)

	// /cmd and /status.
	for name, tc := range map[string]struct {
		h      http.Header
		status int
	}{
		"key":          {http.Header{server.HeaderAPIKey: {d.Token}, "X-Container-Name": {"vm"}}, 200},
		"bearer":       {http.Header{"Authorization": {"Bearer " + d.Token}}, 200},
		"wrong key":    {http.Header{server.HeaderAPIKey: {wrong}}, 401},
		"wrong bearer": {http.Header{"Authorization": {"Bearer " + wrong}}, 401},
		"none":         {http.Header{}, 401},
	} {
		status, res := cmd(t, d, tc.h, `{"command":"version"}`)
		if status != tc.status || (status == 200 && res["success"] != true) {
			t.Errorf("POST /cmd with %s: %d %v, want %d", name, status, res, tc.status)
		}
		req, _ := http.NewRequest(http.MethodGet, d.URL+"/status", nil)
		req.Header = tc.h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.status == 200 && (st["status"] != "ok" || st["os_type"] == "")) {
			t.Errorf("GET /status with %s: %d %v, want %d", name, resp.StatusCode, st, tc.status)
		}
	}
	if status, res := cmd(t, d, http.Header{server.HeaderAPIKey: {d.Token}}, `{"command":"nope"}`); status != 400 || res["success"] != false {
		t.Errorf("POST /cmd of an unknown command: %d %v, want 400 and success false", status, res)
	}
	if status, res := cmd(t, d, http.Header{server.HeaderAPIKey: {d.Token}}, `{"command":"run_command","params":{"command":"exit 2"}}`); status != 200 || res["return_code"] != float64(2) {
		t.Errorf("POST /cmd run_command: %d %v", status, res)
	}
	if strings.Contains(logs.String(), wrong) || strings.Contains(logs.String(), d.Token) {
		t.Fatalf("a key reached the log:\n%s", logs.String())
	}
}

// A daemon without a token (loopback only) needs no key, as computer-server
// on localhost did, and takes any authenticate message.
func TestBusWithoutToken(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{NoToken: true})
	b := dialBus(t, wsURL(d), nil)
	b.ok("authenticate", map[string]any{"api_key": "anything", "container_name": "vm"})
	b.ok("run_command", map[string]any{"command": "true"})
	if status, res := cmd(t, d, nil, `{"command":"version"}`); status != 200 || res["success"] != true {
		t.Fatalf("POST /cmd without a token: %d %v", status, res)
	}
}

// No goroutine outlives a daemon whose bus served commands, refused a
// client in band, and had clients leave with commands queued.
// Not parallel: goleak must see only this test's goroutines.
func TestBusNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("daemon", func(t *testing.T) {
		d := spacesdtest.Start(t, spacesdtest.Options{})
		b := dialBus(t, wsURL(d), http.Header{server.HeaderAPIKey: {d.Token}})
		b.ok("run_command", map[string]any{"command": "true"})
		for range 6 { // more than the queue holds, and nobody reads the answers
			_ = b.ws.WriteMessage(websocket.TextMessage, []byte(`{"command":"run_command","params":{"command":"sleep 0.1"}}`))
		}
		refused := dialBus(t, wsURL(d), nil)
		refused.send(`{"command":"authenticate","params":{"api_key":"wrong"}}`)
		dialBus(t, wsURL(d), nil) // pending when the daemon stops
		cmd(t, d, http.Header{server.HeaderAPIKey: {d.Token}}, `{"command":"mouse_down"}`)
	})
}
