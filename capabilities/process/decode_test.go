package process_test

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

func TestParseRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
		fn   func([]byte) error
	}{
		{"exec argv", `{"argv":["true"]}`, true, parseExec},
		{"exec shell", `{"shell":"echo hi","env":{"A":"b"},"cwd":"/tmp","timeout_ms":5,"stdin":"x","max_output_bytes":10}`, true, parseExec},
		{"exec unknown field", `{"argv":["true"],"timeout":5}`, false, parseExec},
		{"exec trailing", `{"argv":["true"]} {}`, false, parseExec},
		{"exec empty", ``, false, parseExec},
		{"exec not json", `argv=true`, false, parseExec},
		{"exec both", `{"argv":["true"],"shell":"true"}`, false, parseExec},
		{"exec negative timeout", `{"argv":["true"],"timeout_ms":-1}`, false, parseExec},
		{"exec env with =", `{"argv":["true"],"env":{"A=B":"c"}}`, false, parseExec},
		{"exec relative cwd", `{"argv":["true"],"cwd":"tmp"}`, false, parseExec},
		{"start relative cwd", `{"argv":["true"],"cwd":"./x"}`, false, parseStart},
		{"start pty", `{"shell":"bash","pty":{"cols":80,"rows":24},"tag":"x"}`, true, parseStart},
		{"start pty zero", `{"shell":"bash","pty":{"cols":0,"rows":24}}`, false, parseStart},
		{"start stdin", `{"argv":["cat"],"stdin":true}`, true, parseStart},
		{"input stdin", `{"type":"stdin","data":"aGk="}`, true, parseInput},
		{"input close", `{"type":"close_stdin"}`, true, parseInput},
		{"input resize", `{"type":"resize","size":{"cols":1,"rows":2}}`, true, parseInput},
		{"input resize no size", `{"type":"resize"}`, false, parseInput},
		{"input signal", `{"type":"signal","signal":"SIGTERM"}`, true, parseInput},
		{"input bad signal", `{"type":"signal","signal":"SEGV"}`, false, parseInput},
		{"input unknown", `{"type":"eval"}`, false, parseInput},
		{"input bad base64", `{"type":"stdin","data":"!!"}`, false, parseInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.fn([]byte(tc.in))
			if tc.ok && err != nil {
				t.Fatalf("%s: %v", tc.in, err)
			}
			if !tc.ok && api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%s: err %v, want invalid_argument", tc.in, err)
			}
		})
	}
}

// A relative cwd is refused up front, saying so; before, it ran into
// chdir and answered "does not exist".
func TestRelativeCwdMustBeAbsolute(t *testing.T) {
	t.Parallel()
	err := process.ValidateCommand(&api.Command{Argv: []string{"true"}, Cwd: "tmp"})
	if api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Fatalf("relative cwd: %v", err)
	}
}

func parseExec(b []byte) error  { _, err := process.ParseExecRequest(b); return err }
func parseStart(b []byte) error { _, err := process.ParseStartRequest(b); return err }
func parseInput(b []byte) error { _, err := process.ParseStreamInput(b); return err }

// Every parser answers a value or invalid_argument, never a panic or
// another kind.
func fuzzParser(f *testing.F, fn func([]byte) error, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := fn(b); err != nil && api.KindOf(err) != api.KindInvalidArgument {
			t.Fatalf("kind %q: %v", api.KindOf(err), err)
		}
	})
}

func FuzzParseExecRequest(f *testing.F) {
	fuzzParser(f, parseExec, `{"argv":["true"]}`, `{"shell":"echo hi","env":{"A":"b"},"timeout_ms":5}`,
		`{"argv":[""]}`, `{"argv":["a\u0000b"]}`, `{"max_output_bytes":-1,"argv":["x"]}`, `[]`, `null`, `{"stdin":"x"}`)
}

func FuzzParseStartRequest(f *testing.F) {
	fuzzParser(f, parseStart, `{"argv":["cat"],"stdin":true}`, `{"shell":"bash","pty":{"cols":80,"rows":24}}`,
		`{"pty":{"cols":70000}}`, `{"tag":"x","argv":["y"],"user":"0"}`)
}

func FuzzParseStreamInput(f *testing.F) {
	fuzzParser(f, parseInput, `{"type":"stdin","data":"aGk="}`, `{"type":"close_stdin"}`,
		`{"type":"resize","size":{"cols":1,"rows":2}}`, `{"type":"signal","signal":"KILL"}`, `{"type":""}`, `{}`)
}
