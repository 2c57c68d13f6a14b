package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

func TestParseViewerInput(t *testing.T) {
	for _, tt := range []struct {
		in   string
		ok   bool
		want api.ViewerInput
	}{
		{`{"type":"move","x":10,"y":20.5}`, true, api.ViewerInput{Type: "move", X: 10, Y: 20.5}},
		{`{"type":"button","x":1,"y":2}`, true, api.ViewerInput{Type: "button", X: 1, Y: 2, Action: "click"}},
		{`{"type":"button","button":"right","action":"down"}`, true, api.ViewerInput{Type: "button", Button: "right", Action: "down"}},
		{`{"type":"key","key":"ctrl+c"}`, true, api.ViewerInput{Type: "key", Key: "ctrl+c", Action: "press"}},
		{`{"type":"key","key":"Shift_L","action":"up"}`, true, api.ViewerInput{Type: "key", Key: "Shift_L", Action: "up"}},
		{`{"type":"text","text":"héllo"}`, true, api.ViewerInput{Type: "text", Text: "héllo"}},
		{`{"type":"scroll","x":5,"y":5,"dy":-3}`, true, api.ViewerInput{Type: "scroll", X: 5, Y: 5, DY: -3}},
		{`{"type":"teleport"}`, false, api.ViewerInput{}},
		{`{"type":"move","x":1e9,"y":0}`, false, api.ViewerInput{}},
		{`{"type":"button","button":"fourth"}`, false, api.ViewerInput{}},
		{`{"type":"button","action":"press"}`, false, api.ViewerInput{}},
		{`{"type":"button","count":-1}`, false, api.ViewerInput{}},
		{`{"type":"key"}`, false, api.ViewerInput{}},
		{`{"type":"key","key":"a","action":"click"}`, false, api.ViewerInput{}},
		{`{"type":"text"}`, false, api.ViewerInput{}},
		{`{"type":"move","x":1,"y":2,"z":3}`, false, api.ViewerInput{}},
		{`{"type":"move"} {"type":"move"}`, false, api.ViewerInput{}},
		{`[1]`, false, api.ViewerInput{}},
		{`{"type":"text","text":"` + strings.Repeat("a", api.MaxStreamMessageBytes) + `"}`, false, api.ViewerInput{}},
	} {
		got, err := api.ParseViewerInput([]byte(tt.in))
		if tt.ok != (err == nil) {
			t.Errorf("%.60s: err %v, want ok %v", tt.in, err, tt.ok)
			continue
		}
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Errorf("%.60s: kind %s", tt.in, api.KindOf(err))
			}
			continue
		}
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseViewerControl(t *testing.T) {
	for in, ok := range map[string]bool{
		`{"type":"keyframe"}`:             true,
		`{"type":"ping","id":7,"t":12.5}`: true,
		`{"type":"pong"}`:                 false, // the daemon's, not a viewer's
		`{"type":"ping","extra":1}`:       false,
		`nonsense`:                        false,
	} {
		if _, err := api.ParseViewerControl([]byte(in)); ok != (err == nil) {
			t.Errorf("%s: %v, want ok %v", in, err, ok)
		}
	}
}

// FuzzParseViewerInput: any bytes parse or answer invalid_argument, and
// what parses survives a round trip as the same message.
func FuzzParseViewerInput(f *testing.F) {
	for _, s := range []string{`{"type":"move","x":1,"y":2}`, `{"type":"button","action":"down","button":"left"}`,
		`{"type":"key","key":"ctrl+shift+t"}`, `{"type":"text","text":"\u00e9\ud83d\ude00"}`, `{"type":"scroll","dx":1e3}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := api.ParseViewerInput(b)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: error of kind %s: %v", b, api.KindOf(err), err)
			}
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := api.ParseViewerInput(again)
		if err != nil || m2 != m {
			t.Fatalf("%q parsed as %+v, which round-trips to %+v, %v", b, m, m2, err)
		}
	})
}

func FuzzParseViewerControl(f *testing.F) {
	f.Add([]byte(`{"type":"ping","id":1,"t":2}`))
	f.Add([]byte(`{"type":"keyframe"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := api.ParseViewerControl(b); err != nil && api.KindOf(err) != api.KindInvalidArgument {
			t.Fatalf("%q: error of kind %s: %v", b, api.KindOf(err), err)
		}
	})
}
