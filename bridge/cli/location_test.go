package cli_test

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/cli"
)

func TestParseLocation(t *testing.T) {
	tests := []struct {
		in, space, path string
		err             bool
	}{
		{"dev:/tmp/a", "dev", "/tmp/a", false},
		{"direct:127.0.0.1:3211:/tmp/a", "direct:127.0.0.1:3211", "/tmp/a", false},
		{"relay:box:/home/u/", "relay:box", "/home/u/", false},
		{"/tmp/a:b", "", "/tmp/a:b", false},
		{"./dev:/x", "", "./dev:/x", false},
		{"plain.txt", "", "plain.txt", false},
		{"dir/file:/x", "", "dir/file:/x", false},
		{"dev:rel", "", "", true},
		{":/x", "", ":/x", false},
		{"", "", "", true},
	}
	for _, tt := range tests {
		space, path, err := cli.ParseLocation(tt.in)
		if (err != nil) != tt.err || space != tt.space || (!tt.err && path != tt.path) {
			t.Errorf("ParseLocation(%q) = %q, %q, %v; want %q, %q, err=%v", tt.in, space, path, err, tt.space, tt.path, tt.err)
		}
	}
}

// FuzzParseLocation: a Space side always has a non-empty id without "/" and
// an absolute path; joining the parts gives the input back.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"dev:/tmp/a", "direct:127.0.0.1:3211:/x", "relay:c:/", "a:b", "./x:/y", "", ":", ":/", "/a:/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		space, path, err := cli.ParseLocation(s)
		if err != nil {
			return
		}
		if space == "" {
			if path != s {
				t.Fatalf("local %q became %q", s, path)
			}
			return
		}
		if strings.Contains(space, "/") || !strings.HasPrefix(path, "/") || space+":"+path != s {
			t.Fatalf("ParseLocation(%q) = %q, %q", s, space, path)
		}
	})
}
