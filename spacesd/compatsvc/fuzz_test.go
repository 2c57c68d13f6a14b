package compatsvc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
)

// FuzzDecodeCommand: any message decodes and binds without a panic, to a
// command of the table or to an invalid_argument error whose answer is a
// JSON object with success false. The seed corpus is in
// testdata/fuzz/FuzzDecodeCommand.
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range []string{
		`{"command":"version"}`,
		`{"command":"run_command","params":{"command":"echo hi","timeout":1.5}}`,
		`{"command":"left_click","params":{"x":10,"y":20}}`,
		`{"command":"drag","params":{"path":[[1,2],[3,4]],"button":"right","duration":0.1}}`,
		`{"command":"get_window_name","params":{"window_id":"0x1a00007"}}`,
		`{"command":"write_bytes","params":{"path":"~/x","content_b64":"aGk=","append":true}}`,
	} {
		f.Add([]byte(s))
	}
	table := commandTable()
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := decodeMessage(msg)
		var c call
		if err == nil {
			c, err = bind(table, m)
		}
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: kind %s, want invalid_argument: %v", msg, api.KindOf(err), err)
			}
			var answer map[string]any
			b := failure(err, nil)
			if json.Unmarshal(b, &answer) != nil || answer["success"] != false || answer["error"] == "" {
				t.Fatalf("%q: failure answer %s", msg, b)
			}
			if !utf8.Valid(b) {
				t.Fatalf("%q: the answer is not UTF-8: %q", msg, b)
			}
			return
		}
		cmd, ok := table[c.name]
		if !ok || cmd.alias != "" || c.run == nil {
			t.Fatalf("%q bound to %q, which is no command of the table", msg, c.name)
		}
	})
}
