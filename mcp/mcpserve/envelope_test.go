package mcpserve

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// decodedIsResponse is what isResponse answered before it stepped over
// values: decode the envelope, then look. isResponse must agree with it on
// every valid JSON message.
func decodedIsResponse(msg []byte) bool {
	var e envelope
	return json.Unmarshal(msg, &e) == nil && len(e.ID) > 0 && e.Method == "" && (len(e.Result) > 0 || len(e.Error) > 0)
}

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"","result":null}`,
	`{"jsonrpc":"2.0","id":1,"method":null,"result":1}`,
	`{"jsonrpc":"2.0","id":1,"method":5,"result":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","method":"","result":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"","method":"x","result":1}`,
	`{"ID":1,"RESULT":{}}`,
	`{"\u0069d":1,"re\u0073ult":[]}`,
	`{"i\"d":1,"result":{}}`,
	`{"id":1,"result":"a\\"}`,
	`{"id":1,"result":"a\\\"}"}`,
	` { "id" : 1 , "result" : [ 1 , { "a" : "}" } ] } `,
	`{"id":1,"result":{}} x`,
	`{"id":1,"result":{}`,
	`{"id":1,"result"}`,
	`{"id":1,,"result":1}`,
	`{}`, `[]`, `null`, ``, `"id"`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"image","data":"` + strings.Repeat("QUJD", 1000) + `","mimeType":"image/jpeg"}]}}`,
}

func TestIsResponse(t *testing.T) {
	for _, msg := range envelopeSeeds {
		if json.Valid([]byte(msg)) {
			if got, want := isResponse([]byte(msg)), decodedIsResponse([]byte(msg)); got != want {
				t.Errorf("isResponse(%.80s) = %v, decoding says %v", msg, got, want)
			}
		} else if isResponse([]byte(msg)) && !strings.HasPrefix(msg, `{"id":1,"result":{}}`) {
			t.Errorf("isResponse(%.80s) = true for invalid JSON that does not even start as a response", msg)
		}
	}
}

// FuzzIsResponse holds isResponse to decoding on every valid JSON message,
// and to not panicking on anything.
func FuzzIsResponse(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		got := isResponse(msg)
		if json.Valid(msg) && got != decodedIsResponse(msg) {
			t.Fatalf("isResponse(%q) = %v, decoding says %v", msg, got, !got)
		}
	})
}

// BenchmarkIsResponse classifies a screenshot's answer, 170 KB of JPEG.
func BenchmarkIsResponse(b *testing.B) {
	img := make([]byte, 170<<10)
	msg := []byte(`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"image","data":"` +
		base64.StdEncoding.EncodeToString(img) + `","mimeType":"image/jpeg"}],"structuredContent":{"width":1280}}}`)
	for _, tc := range []struct {
		name string
		f    func([]byte) bool
	}{{"scan", isResponse}, {"decode", decodedIsResponse}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if !tc.f(msg) {
					b.Fatal("not a response")
				}
			}
		})
	}
}
