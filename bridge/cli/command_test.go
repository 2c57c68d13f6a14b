package cli_test

import (
	"strings"
	"testing"
)

// The registry commands' frame: a wrong count of arguments or a bad flag
// value is a usage error (exit 2, the usage or the value named), and a
// command that cannot reach a relay fails (exit 1) with the hint to log in.
func TestRegistryCommandUsage(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"share", "dev"}, 2, "usage: cua-bridge share SPACE WHO"},
		{[]string{"share", "dev", "bob", "--role", "boss"}, 2, "boss"},
		{[]string{"share", "dev", "bob", "--role", "editor"}, 1, "relay login"},
		{[]string{"unshare"}, 2, "usage: cua-bridge unshare SPACE [WHO]"},
		{[]string{"unshare", "dev", "bob", "carol"}, 2, "usage: cua-bridge unshare"},
		{[]string{"shares", "dev", "--audit", "extra"}, 2, "usage: cua-bridge shares"},
		{[]string{"relay", "register"}, 2, "usage: cua-bridge relay register"},
		{[]string{"relay", "unregister", "a", "b"}, 2, "usage: cua-bridge relay unregister"},
		{[]string{"relay", "status", "now"}, 2, "usage: cua-bridge relay status"},
		{[]string{"space", "ls", "x"}, 2, "usage: cua-bridge space ls"},
		{[]string{"shares", "dev", "-h"}, 0, "--audit"},
	} {
		res := run(t.Context(), home, "", c.args...)
		if res.code != c.code || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, res.code, res.stderr, c.code, c.want)
		}
	}
	// space ls on an empty registry prints its table's head, and --json an
	// empty list.
	if res := run(t.Context(), home, "", "space", "ls"); res.code != 0 || !strings.Contains(res.stdout, "NAME") {
		t.Errorf("space ls: %+v", res)
	}
	if res := run(t.Context(), home, "", "space", "ls", "--json"); res.code != 0 || strings.TrimSpace(res.stdout) != "[]" {
		t.Errorf("space ls --json: %+v", res)
	}
}
