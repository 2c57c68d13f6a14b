package desktop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
)

func FuzzParseKeyCombo(f *testing.F) {
	for _, s := range []string{"Return", "ctrl+shift+t", "alt+F4", "ctrl++", "+", "ctrl+", "shift+A", "super",
		"ctrl+ctrl+a", "Ctrl+Alt+Delete", "ё", "ctrl+✓", "F24", "f25", "", "++", "a+b", "page_up", "ctrl+\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := desktop.ParseKeyCombo(s)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("ParseKeyCombo(%q): kind %s, want invalid_argument", s, api.KindOf(err))
			}
			return
		}
		if c.Key == 0 {
			t.Fatalf("ParseKeyCombo(%q) gave no key", s)
		}
		seen := map[uint32]bool{}
		for _, m := range c.Mods {
			if seen[m] {
				t.Fatalf("ParseKeyCombo(%q) repeats modifier 0x%x", s, m)
			}
			seen[m] = true
		}
	})
}

// FuzzInputBodies feeds arbitrary JSON to every input call of a Desktop
// without a display: each must answer invalid_argument or
// capability_missing, never panic or act.
func FuzzInputBodies(f *testing.F) {
	for _, s := range []string{`{"x":1,"y":2}`, `{"x":1e308,"y":-1,"scale":0.5}`, `{"button":"right","count":2}`,
		`{"count":-1}`, `{"text":"Привет 你好 ✓"}`, `{"text":"\u0000"}`, `{"key":"ctrl+shift+t"}`, `{"dy":-5,"dx":3}`,
		`{"from_x":0,"to_x":10,"duration_ms":-4}`, `{"scale":"NaN"}`, `[]`, `null`, `{"x":null}`} {
		f.Add([]byte(s))
	}
	d := desktop.New(desktop.Options{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(err error) {
			if k := api.KindOf(err); k != api.KindInvalidArgument && k != api.KindCapabilityMissing {
				t.Fatalf("body %q: kind %q", body, k)
			}
		}
		var mv api.MouseMoveRequest
		if json.Unmarshal(body, &mv) == nil {
			_, err := d.MoveMouse(ctx, mv)
			check(err)
		}
		var cl api.ClickRequest
		if json.Unmarshal(body, &cl) == nil {
			_, err := d.Click(ctx, cl)
			check(err)
		}
		var dr api.DragRequest
		if json.Unmarshal(body, &dr) == nil {
			_, err := d.Drag(ctx, dr)
			check(err)
		}
		var sc api.ScrollRequest
		if json.Unmarshal(body, &sc) == nil {
			_, err := d.Scroll(ctx, sc)
			check(err)
		}
		var ky api.KeyRequest
		if json.Unmarshal(body, &ky) == nil {
			_, err := d.Key(ctx, ky.Key)
			check(err)
		}
		var ty api.TypeRequest
		if json.Unmarshal(body, &ty) == nil {
			_, err := d.Type(ctx, ty.Text)
			check(err)
		}
	})
}
