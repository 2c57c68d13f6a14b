package files

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// Mkdir makes a directory (with its parents when asked). An existing
// directory is fine with parents (as mkdir -p), refused without. Symlinks
// on the way are followed under the trust rule of resolve.go.
func Mkdir(req api.MkdirRequest) error {
	op, err := CheckMkdir(req)
	if err != nil {
		return err
	}
	if op.Path == "/" {
		if op.Parents {
			return nil
		}
		return api.Errorf(api.KindPreconditionFailed, "mkdir /: already exists")
	}
	w := newWalker("mkdir")
	var d *dir
	var name string
	if op.Parents {
		mode := unixMode(op.Mode)
		d, name, err = w.parentMaking(op.Path, &mode)
	} else {
		d, name, err = w.parent(op.Path)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	// A given mode is applied exactly, past the umask, once the directory
	// is ours: made private first, it is never looser than asked.
	first := unixMode(op.Mode)
	if op.ModeGiven {
		first = 0o700
	}
	err = unix.Mkdirat(d.fd, name, first)
	if errors.Is(err, fs.ErrExist) {
		if !op.Parents {
			return api.Errorf(api.KindPreconditionFailed, "mkdir %s: already exists", op.Path).
				WithHint("pass parents=true to accept an existing directory")
		}
		// As mkdir -p: an existing directory (or a symlink to one that may
		// be followed) is fine, and keeps its mode: the mode is only for
		// what we make.
		sub, err := w.step(d, name)
		if err == nil {
			sub.Close()
			return nil
		}
		if errors.Is(err, unix.ENOTDIR) {
			return api.Errorf(api.KindInvalidArgument, "mkdir %s: exists and is not a directory", op.Path)
		}
		return fsError("mkdir", op.Path, err)
	}
	if err != nil {
		return fsError("mkdir", op.Path, err)
	}
	if op.ModeGiven {
		// Opened without following: chmod by name would follow a symlink
		// swapped in since the mkdir.
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fsError("mkdir", op.Path, err)
		}
		defer unix.Close(fd)
		if err := unix.Fchmod(fd, unixMode(op.Mode)); err != nil {
			return fsError("mkdir", op.Path, err)
		}
	}
	return nil
}
