package server

import (
	"encoding/json"
	"maps"
	"testing"
)

// A replayed JSON object is the same object with "replayed": true; any
// other body is passed on as it was.
func FuzzMarkReplayed(f *testing.F) {
	for _, seed := range []string{`{}`, `{"stdout":"x","exit_code":0}`, ` {"a":[1,2,{"b":null}]}`, "{\n}", `[]`, `"text"`, ``, `{"replayed":false}`, `{`, `not json`} {
		f.Add([]byte(seed), "application/json")
	}
	f.Add([]byte(`{"a":1}`), "text/plain")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		out := markReplayed(body, contentType)
		var in map[string]any
		if json.Unmarshal(body, &in) != nil || contentType != "application/json" {
			if string(out) != string(body) && contentType != "application/json" {
				t.Fatalf("a body that is no JSON object answer was changed: %q -> %q", body, out)
			}
			return
		}
		if _, had := in["replayed"]; had {
			return // a handler's own "replayed" field: duplicate keys, left to the handler
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q -> %q: not JSON: %v", body, out, err)
		}
		if got["replayed"] != true {
			t.Fatalf("%q -> %q: no replayed", body, out)
		}
		delete(got, "replayed")
		if !maps.EqualFunc(in, got, func(a, b any) bool { x, _ := json.Marshal(a); y, _ := json.Marshal(b); return string(x) == string(y) }) {
			t.Fatalf("%q -> %q: the object changed", body, out)
		}
	})
}
