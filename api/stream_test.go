package api_test

import (
	"encoding/json"
	"net/url"
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
		`{"type":"keyframe"}`:                        true,
		`{"type":"ping","id":7,"t":12.5}`:            true,
		`{"type":"pong"}`:                            false, // the daemon's, not a viewer's
		`{"type":"ping","extra":1}`:                  false,
		`nonsense`:                                   false,
		`{"type":"peer","peer":{"x":10,"y":20}}`:     true,
		`{"type":"peer","peer":{"away":true}}`:       true,
		`{"type":"peer","peer":{"x":-1,"y":0}}`:      true, // just off the video's edge
		`{"type":"peer"}`:                            false,
		`{"type":"peer","peer":{"x":1e9,"y":0}}`:     false,
		`{"type":"peer","peer":{"x":40000,"y":0}}`:   false,
		`{"type":"peer","peer":{"x":1.5,"y":0}}`:     false,
		`{"type":"peer","peer":{"x":1,"y":2,"z":3}}`: false,
		`{"type":"who","viewers":[]}`:                false, // the daemon's
	} {
		if _, err := api.ParseViewerControl([]byte(in)); ok != (err == nil) {
			t.Errorf("%s: %v, want ok %v", in, err, ok)
		}
	}
	// A viewer does not speak for another: the id it sends is dropped,
	// and so are an away pointer's coordinates.
	for in, want := range map[string]api.PeerPointer{
		`{"type":"peer","peer":{"id":"someone-else","x":3,"y":4}}`: {X: 3, Y: 4},
		`{"type":"peer","peer":{"away":true,"x":3,"y":4}}`:         {Away: true},
	} {
		m, err := api.ParseViewerControl([]byte(in))
		if err != nil || m.Peer == nil || *m.Peer != want {
			t.Errorf("%s: %+v, %v; want peer %+v", in, m.Peer, err, want)
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
	f.Add([]byte(`{"type":"peer","peer":{"x":640,"y":480}}`))
	f.Add([]byte(`{"type":"peer","peer":{"away":true}}`))
	f.Add([]byte(`{"type":"peer","peer":{"id":"x","x":-32768,"y":32768}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := api.ParseViewerControl(b)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: error of kind %s: %v", b, api.KindOf(err), err)
			}
			return
		}
		if m.Type == api.ControlPeer && (m.Peer == nil || m.Peer.ID != "" || m.Peer.Away && (m.Peer.X != 0 || m.Peer.Y != 0)) {
			t.Fatalf("%q: peer %+v: want one, without id, and no point when away", b, m.Peer)
		}
	})
}

func TestParseStreamQuery(t *testing.T) {
	for _, tt := range []struct {
		query string
		want  api.StreamOptions
		ok    bool
	}{
		{"", api.StreamOptions{}, true},
		{"max_fps=15", api.StreamOptions{MaxFPS: 15}, true},
		{"max_width=1280&max_height=720", api.StreamOptions{MaxWidth: 1280, MaxHeight: 720}, true},
		{"max_height=16", api.StreamOptions{MaxHeight: 16}, true},
		{"max_width=16383&max_fps=60", api.StreamOptions{MaxWidth: 16383, MaxFPS: 60}, true},
		{"max_width=1280&whep_extra=1", api.StreamOptions{MaxWidth: 1280}, true}, // others' parameters pass
		{"max_width=15", api.StreamOptions{}, false},
		{"max_width=16384", api.StreamOptions{}, false},
		{"max_width=0", api.StreamOptions{}, false}, // no bound is no parameter
		{"max_height=-720", api.StreamOptions{}, false},
		{"max_width=1280.5", api.StreamOptions{}, false},
		{"max_width=", api.StreamOptions{}, false},
		{"max_width=1e3", api.StreamOptions{}, false},
		{"max_width=640&max_width=1280", api.StreamOptions{}, false},
		{"max_fps=0", api.StreamOptions{}, false},
		{"max_fps=61", api.StreamOptions{}, false},
		{"max_height=99999999999999999999", api.StreamOptions{}, false},
		{"audio=1", api.StreamOptions{Audio: true}, true},
		{"audio=0&max_fps=20", api.StreamOptions{MaxFPS: 20}, true},
		{"audio=true", api.StreamOptions{}, false},
		{"audio=1&audio=1", api.StreamOptions{}, false},
		{"audio=", api.StreamOptions{}, false},
	} {
		q, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := api.ParseStreamQuery(q)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("%q: %+v, %v; want %+v, ok %v", tt.query, got, err, tt.want, tt.ok)
		}
		if err != nil && api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("%q: kind %s", tt.query, api.KindOf(err))
		}
	}
}

func TestStreamScale(t *testing.T) {
	for _, tt := range []struct {
		w, h, maxW, maxH int
		num, den         int
		size             api.Size
	}{
		{1920, 1080, 0, 0, 1, 1, api.Size{Width: 1920, Height: 1080}},
		{1920, 1080, 1280, 0, 2, 3, api.Size{Width: 1280, Height: 720}},
		{1920, 1080, 0, 720, 2, 3, api.Size{Width: 1280, Height: 720}},
		{1920, 1080, 1280, 1000, 2, 3, api.Size{Width: 1280, Height: 720}},  // the width binds
		{1920, 1080, 1800, 540, 1, 2, api.Size{Width: 960, Height: 540}},    // the height binds
		{1920, 1080, 3840, 2160, 1, 1, api.Size{Width: 1920, Height: 1080}}, // never up
		{1920, 1080, 1920, 1080, 1, 1, api.Size{Width: 1920, Height: 1080}},
		{1920, 1080, 1919, 0, 1919, 1920, api.Size{Width: 1919, Height: 1079}}, // 1079.4 rows: rounded down
		{640, 480, 320, 0, 1, 2, api.Size{Width: 320, Height: 240}},
		{200, 200, 0, 16, 2, 25, api.Size{Width: 16, Height: 16}},
		{10000, 3, 16, 0, 1, 625, api.Size{Width: 16, Height: 1}}, // a side below one pixel stays one
		{1080, 1920, 1280, 1280, 2, 3, api.Size{Width: 720, Height: 1280}},
	} {
		num, den := api.StreamScale(tt.w, tt.h, tt.maxW, tt.maxH)
		size := api.StreamFrameSize(tt.w, tt.h, tt.maxW, tt.maxH)
		if num != tt.num || den != tt.den || size != tt.size {
			t.Errorf("%dx%d within %dx%d: %d/%d, %+v; want %d/%d, %+v", tt.w, tt.h, tt.maxW, tt.maxH, num, den, size, tt.num, tt.den, tt.size)
		}
	}
}

// FuzzParseStreamQuery: any query parses or answers invalid_argument;
// what parses is within the bounds and survives a round trip through
// Query; the frame size it asks of any target fits its bounds, keeps the
// aspect ratio within a pixel, and never grows.
func FuzzParseStreamQuery(f *testing.F) {
	for _, s := range []string{"", "max_fps=30", "max_width=1280&max_height=720", "max_width=16&max_height=16383",
		"max_width=1280&max_width=640", "max_height=%31%32%38%30", "max_fps=-1&x=y", "max_width=+1280", "audio=1&ice=relay"} {
		f.Add(s, uint16(1920), uint16(1080))
	}
	f.Fuzz(func(t *testing.T, raw string, w, h uint16) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, err := api.ParseStreamQuery(q)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: error of kind %s: %v", raw, api.KindOf(err), err)
			}
			return
		}
		inRange := func(v, lo, hi int) bool { return v == 0 || v >= lo && v <= hi }
		if !inRange(o.MaxFPS, 1, api.MaxStreamFPS) || !inRange(o.MaxWidth, api.MinStreamDimension, api.MaxStreamDimension) ||
			!inRange(o.MaxHeight, api.MinStreamDimension, api.MaxStreamDimension) {
			t.Fatalf("%q parsed out of range: %+v", raw, o)
		}
		back, err := url.ParseQuery(o.Query())
		if err != nil {
			t.Fatal(err)
		}
		if again, err := api.ParseStreamQuery(back); err != nil || again != o {
			t.Fatalf("%q: %+v reads back from %q as %+v, %v", raw, o, o.Query(), again, err)
		}
		tw, th := int(w)%8192+1, int(h)%8192+1
		s := api.StreamFrameSize(tw, th, o.MaxWidth, o.MaxHeight)
		if s.Width > tw || s.Height > th || o.MaxWidth > 0 && s.Width > o.MaxWidth || o.MaxHeight > 0 && s.Height > o.MaxHeight {
			t.Fatalf("%dx%d within %+v: frame %+v", tw, th, o, s)
		}
		// Aspect: the rounded-down side is within a pixel of the exact one.
		if d := float64(s.Width)*float64(th) - float64(s.Height)*float64(tw); d > float64(tw) || -d > float64(th) {
			if s.Width > 1 && s.Height > 1 {
				t.Fatalf("%dx%d within %+v: frame %+v has another aspect", tw, th, o, s)
			}
		}
	})
}
