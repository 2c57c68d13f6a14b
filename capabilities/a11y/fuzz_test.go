package a11y

import (
	"slices"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/trycua/cua-spacesd/api"
)

// FuzzDecodeID: any string either fails to decode or names a valid
// element that encodes back to the same generation and element.
func FuzzDecodeID(f *testing.F) {
	f.Add(encodeID(1, ref{":1.23", "/org/a11y/atspi/accessible/42"}))
	f.Add(encodeID(1<<40, ref{"org.gtk.App", "/"}))
	f.Add("")
	f.Add("!!")
	f.Add("MXw6MS4yfA")     // "1|:1.2|"
	f.Add("enp8OjEuMnwvYQ") // "zz|:1.2|/a"
	f.Fuzz(func(t *testing.T, id string) {
		gen, r, err := decodeID(id)
		if err != nil {
			return
		}
		if !r.valid() {
			t.Fatalf("decodeID(%q) answered an invalid element %+v", id, r)
		}
		gen2, r2, err := decodeID(encodeID(gen, r))
		if err != nil || gen2 != gen || r2 != r {
			t.Fatalf("round trip of %q: %d %+v %v, want %d %+v", id, gen2, r2, err, gen, r)
		}
	})
}

// FuzzNormalRole: every raw role maps into the fixed set.
func FuzzNormalRole(f *testing.F) {
	for raw := range roleMap {
		f.Add(raw)
	}
	f.Add("PUSH_BUTTON")
	f.Add("check-box")
	f.Add("")
	f.Add("\xff")
	f.Fuzz(func(t *testing.T, raw string) {
		if r := normalRole(raw); !slices.Contains(api.A11yRoles, r) {
			t.Fatalf("normalRole(%q) = %q, not a normalised role", raw, r)
		}
	})
}

// FuzzStateSet: any GetState reply decodes to known state names only.
func FuzzStateSet(f *testing.F) {
	f.Add(uint32(1<<8|1<<24|1<<25|1<<30), uint32(0), uint32(0))
	f.Add(^uint32(0), ^uint32(0), ^uint32(0))
	f.Fuzz(func(t *testing.T, a, b, c uint32) {
		for _, s := range stateSet([]uint32{a, b, c}) {
			if !reportedStates[s] {
				t.Fatalf("stateSet answered %q", s)
			}
		}
	})
}

func TestNormalRole(t *testing.T) {
	for raw, want := range map[string]string{
		"push button": api.A11yRoleButton, "PUSH_BUTTON": api.A11yRoleButton, "check box": api.A11yRoleCheckBox,
		"text": api.A11yRoleTextField, "frame": api.A11yRoleWindow, "menu item": api.A11yRoleMenuItem,
		"page tab list": api.A11yRoleTabList, "filler": api.A11yRolePanel, "redundant object": api.A11yRoleOther,
	} {
		if got := normalRole(raw); got != want {
			t.Errorf("normalRole(%q) = %q, want %q", raw, got, want)
		}
	}
	// Every role of the map is in the fixed set.
	for raw, r := range roleMap {
		if !slices.Contains(api.A11yRoles, r) {
			t.Errorf("roleMap[%q] = %q, not in api.A11yRoles", raw, r)
		}
	}
}

func TestStateSet(t *testing.T) {
	got := stateSet([]uint32{1<<4 | 1<<8 | 1<<25 | 1<<19, 0})
	if want := []string{"checked", "enabled", "showing"}; !slices.Equal(got, want) {
		t.Errorf("stateSet = %v, want %v (opaque is not reported)", got, want)
	}
}

func TestDecodeIDRejects(t *testing.T) {
	for _, id := range []string{"", "@@", encodeID(1, ref{"", "/a"}), encodeID(1, ref{":1.1", "rel"}), encodeID(1, ref{":1.1", nullPath})} {
		if _, _, err := decodeID(id); err == nil {
			t.Errorf("decodeID(%q) accepted", id)
		}
	}
	_ = dbus.ObjectPath("")
}
