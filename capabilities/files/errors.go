package files

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
)

// fsError turns an error of the file system into an *api.Error whose kind a
// caller can branch on; op and path name what failed.
func fsError(op, path string, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return api.Errorf(api.KindNotFound, "%s %s: no such file or directory", op, path).WithHint("list the parent directory first")
	case errors.Is(err, fs.ErrPermission):
		return api.Errorf(api.KindPermissionDenied, "%s %s: permission denied", op, path).
			WithHint("check the file's owner and mode; spacesd runs as its own user")
	case isDiskFull(err):
		return api.Errorf(api.KindIO, "%s %s: disk full: %w", op, path, err).WithHint("free space on the Space's disk, then retry")
	case errors.Is(err, syscall.ENOTDIR):
		return api.Errorf(api.KindInvalidArgument, "%s %s: a parent of the path is not a directory", op, path)
	case errors.Is(err, syscall.EISDIR):
		return api.Errorf(api.KindInvalidArgument, "%s %s: is a directory", op, path)
	case errors.Is(err, syscall.EROFS):
		return api.Errorf(api.KindPermissionDenied, "%s %s: read-only file system", op, path)
	case errors.Is(err, syscall.ELOOP):
		return api.Errorf(api.KindInvalidArgument, "%s %s: too many levels of symbolic links (a loop?)", op, path)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return api.Errorf(api.KindInvalidArgument, "%s %s: name too long", op, path)
	}
	return api.Errorf(api.KindIO, "%s %s: %w", op, path, err)
}

// isDiskFull reports whether err means no space (or no quota) is left.
func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
