package relayreg

import (
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// ParseRole takes what a caller typed: it answers viewer or editor, or
// invalid_argument, and never anything else (an owner's role is not a
// share's).
func FuzzParseRole(f *testing.F) {
	for _, s := range []string{"", "viewer", "editor", " editor\n", "owner", "link", "Viewer", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRole(s)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument || r != "" {
				t.Fatalf("ParseRole(%q) = %q, %v", s, r, err)
			}
			return
		}
		if r != protocol.RoleViewer && r != protocol.RoleEditor {
			t.Fatalf("ParseRole(%q) = %q", s, r)
		}
	})
}
