package compatsvc

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

func TestDecodeMessage(t *testing.T) {
	cases := []struct {
		in      string
		command string
		params  string
		err     string // a part of the error; "" = none
	}{
		{in: `{"command":"version"}`, command: "version"},
		{in: `{"command":"version","params":null}`, command: "version"},
		{in: ` {"command":"ls","params":{"path":"/"},"extra":1} `, command: "ls", params: `{"path":"/"}`},
		{in: ``, err: "empty"},
		{in: `not json`, err: "not valid JSON"},
		{in: `{"command":"x"`, err: "not valid JSON"},
		{in: `[1,2]`, err: "JSON array, not an object"},
		{in: `"version"`, err: "JSON string, not an object"},
		{in: `{}`, err: "names no command"},
		{in: `{"command":null}`, err: "names no command"},
		{in: `{"command":7}`, err: "command must be a string, got a number"},
		{in: `{"command":["a"]}`, err: "command must be a string, got an array"},
		{in: `{"command":""}`, err: "command is empty"},
		{in: `{"command":"ls","params":[1]}`, err: "params of \"ls\" must be a JSON object, got an array"},
		{in: `{"command":"ls","params":"x"}`, err: "must be a JSON object, got a string"},
	}
	for _, tc := range cases {
		m, err := decodeMessage([]byte(tc.in))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || api.KindOf(err) != api.KindInvalidArgument {
				t.Errorf("decode %q: %v, want invalid_argument with %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("decode %q: %v", tc.in, err)
		case m.Command != tc.command || string(m.Params) != tc.params:
			t.Errorf("decode %q = %q %s, want %q %s", tc.in, m.Command, m.Params, tc.command, tc.params)
		}
	}
}

// Params bind by name and type: a wrong type names the param and what it
// wants, a required one that is missing or null is named, params a
// command does not take are ignored.
func TestBindParams(t *testing.T) {
	table := commandTable()
	cases := []struct {
		msg  string
		name string // the command bound; "" = an error
		err  string
	}{
		{msg: `{"command":"run_command","params":{"command":"true","unknown":1}}`, name: "run_command"},
		{msg: `{"command":"exec","params":{"command":"true"}}`, name: "run_command"},
		{msg: `{"command":"run_command","params":{"command":5}}`, err: "run_command: parameter command: want a string, got number"},
		{msg: `{"command":"run_command"}`, err: "run_command: missing the parameter command"},
		{msg: `{"command":"run_command","params":{"command":null}}`, err: "missing the parameter command"},
		{msg: `{"command":"left_click","params":{"x":"10","y":5}}`, err: "left_click: parameter x: want a number, got string"},
		{msg: `{"command":"left_click","params":{}}`, name: "left_click"},
		{msg: `{"command":"scroll_down","params":{"clicks":1.5}}`, err: "parameter clicks: want an integer, got number 1.5"},
		{msg: `{"command":"write_bytes","params":{"path":"/x","content_b64":"", "append":"yes"}}`, err: "parameter append: want true or false"},
		{msg: `{"command":"hotkey","params":{"keys":"ctrl+c"}}`, err: "parameter keys: want an array, got string"},
		{msg: `{"command":"get_window_name","params":{"window_id":"0x1a00007"}}`, name: "get_window_name"},
		{msg: `{"command":"get_window_name","params":{"window_id":"firefox"}}`, err: "is not a window id"},
		{msg: `{"command":"get_window_name","params":{"window_id":1.5}}`, err: "is not a window id"},
		{msg: `{"command":"get_window_name","params":{"window_id":true}}`, err: "want a number or a string holding one, got a boolean"},
		{msg: `{"command":"drag","params":{"path":[[1,2],[3,"4"]]}}`, err: "parameter path"},
		{msg: `{"command":"lft_click"}`, err: "left_click?"},
		{msg: `{"command":"screenshoot"}`, err: "Did you mean: screenshot"},
		{msg: `{"command":"zzzzzzzzzzzz"}`, err: "docs/computer-server.md lists the commands"},
	}
	for _, tc := range cases {
		m, err := decodeMessage([]byte(tc.msg))
		if err != nil {
			t.Fatalf("decode %s: %v", tc.msg, err)
		}
		c, err := bind(table, m)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || api.KindOf(err) != api.KindInvalidArgument {
				t.Errorf("bind %s: %v, want invalid_argument with %q", tc.msg, err, tc.err)
			}
		case err != nil:
			t.Errorf("bind %s: %v", tc.msg, err)
		case c.name != tc.name:
			t.Errorf("bind %s = %s, want %s", tc.msg, c.name, tc.name)
		}
	}
}

func TestSuggest(t *testing.T) {
	table := commandTable()
	for in, want := range map[string]string{
		"type":        "type_text",
		"get_window":  "get_window_name",
		"clipboard":   "set_clipboard",
		"scrol":       "scroll",
		"doubleclick": "double_click",
	} {
		if got := suggest(table, in); !slices.Contains(got, want) || len(got) > maxSuggestions {
			t.Errorf("suggest(%q) = %v, want it to hold %s", in, got, want)
		}
	}
}

func TestAnswers(t *testing.T) {
	b, err := success(nil)
	if err != nil || string(b) != `{"success":true}` {
		t.Fatalf("success(nil) = %s %v", b, err)
	}
	b, _ = success(existsResult{Exists: true})
	if string(b) != `{"success":true,"exists":true}` {
		t.Fatalf("success = %s", b)
	}
	f := failure(api.Errorf(api.KindTimeout, "too slow"), runCommandResult{Stdout: "partial", ReturnCode: -1})
	var got map[string]any
	if err := json.Unmarshal(f, &got); err != nil {
		t.Fatalf("failure answer %s is no JSON object: %v", f, err)
	}
	if got["success"] != false || got["error"] != "too slow" || got["kind"] != "timeout" || got["stdout"] != "partial" || got["return_code"] != float64(-1) {
		t.Fatalf("failure answer = %s", f)
	}
}

// Every key name the clients send maps onto a name the desktop parses.
func TestKeyNames(t *testing.T) {
	names := []string{"a", "Z", "5", "+", "é", "✓", "ctrl+shift+t", "Return", "F12", "f5", "num7", "Page_Up", "XF86AudioMute"}
	for n := range keyAliases {
		names = append(names, n, strings.ToUpper(n))
	}
	for _, n := range names {
		ours, err := keyName(n)
		if err != nil {
			t.Errorf("keyName(%q): %v", n, err)
			continue
		}
		if err := parseKey(ours); err != nil {
			t.Errorf("keyName(%q) = %q, which the desktop refuses: %v", n, ours, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 100), "\xff"} {
		if _, err := keyName(bad); api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("keyName(%q): %v, want invalid_argument", bad, err)
		}
	}
	if err := parseKey("nosuchkey"); err == nil {
		t.Error("the desktop took nosuchkey")
	}
}
