package files

import (
	"path/filepath"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// MaxPathBytes bounds a path argument; Linux's PATH_MAX is 4096 and no
// syscall would take a longer one anyway.
const MaxPathBytes = 4096

// CleanPath checks a path argument and returns it cleaned. It must be
// absolute, hold no NUL byte and no ".." element: "/a/link/.." means one
// thing to the kernel and another to filepath.Clean, so such a path is
// refused rather than guessed. Repeated slashes, "." elements and a
// trailing slash are harmless and cleaned away.
func CleanPath(arg, p string) (string, error) {
	switch {
	case p == "":
		return "", api.Errorf(api.KindInvalidArgument, "%s is empty; an absolute path was expected", arg)
	case len(p) > MaxPathBytes:
		return "", api.Errorf(api.KindInvalidArgument, "%s is %d bytes long; at most %d are allowed", arg, len(p), MaxPathBytes)
	case strings.IndexByte(p, 0) >= 0:
		return "", api.Errorf(api.KindInvalidArgument, "%s %q holds a NUL byte", arg, p)
	case !filepath.IsAbs(p):
		return "", api.Errorf(api.KindInvalidArgument, "%s %q is not absolute; paths must start with /", arg, p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", api.Errorf(api.KindInvalidArgument, "%s %q holds a \"..\" element; give the path without it", arg, p)
		}
	}
	return filepath.Clean(p), nil
}
