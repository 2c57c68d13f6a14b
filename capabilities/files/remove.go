package files

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// removeBatch is how many names a recursive removal reads at a time.
const removeBatch = 1024

// Remove deletes a file, a symlink (not its target) or a directory. A
// non-empty directory needs Recursive; "/" is always refused. Symlinks in
// the directories on the way are followed under the trust rule of
// resolve.go, and a recursive removal never follows one.
func Remove(req api.RemoveRequest) error {
	r, err := CheckRemove(req)
	if err != nil {
		return err
	}
	d, name, err := newWalker("remove").parent(r.Path)
	if err != nil {
		return err
	}
	defer d.Close()
	st, err := d.lstat(name)
	if err != nil {
		return fsError("remove", r.Path, err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	switch {
	case isDir && r.Recursive:
		err = removeAllAt(d, name)
	case isDir:
		err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	default:
		err = unix.Unlinkat(d.fd, name, 0)
	}
	if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		return api.Errorf(api.KindPreconditionFailed, "remove %s: directory not empty; pass recursive=true to remove it and everything in it", r.Path)
	}
	if err != nil {
		return fsError("remove", r.Path, err)
	}
	return nil
}

// removeAllAt removes name in d and, if it is a directory, everything in
// it, working relative to each directory opened without following a
// symlink: an entry swapped for a symlink is removed, never followed.
func removeAllAt(d *dir, name string) error {
	err := unix.Unlinkat(d.fd, name, 0)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// EISDIR on Linux, EPERM elsewhere: a directory, to empty first.
	fd, oerr := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		if errors.Is(oerr, unix.ENOTDIR) || errors.Is(oerr, unix.ELOOP) {
			return err
		}
		return oerr
	}
	f := os.NewFile(uintptr(fd), path.Join(d.path, name))
	defer f.Close()
	sub := &dir{fd: fd, path: f.Name()}
	for {
		// Read from the start each round: removing entries while reading a
		// directory may make the reading skip some.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		names, rerr := f.Readdirnames(removeBatch)
		if len(names) == 0 {
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return rerr
			}
			break
		}
		for _, n := range names {
			if err := removeAllAt(sub, n); err != nil {
				// A round that removes nothing would repeat forever.
				return err
			}
		}
	}
	err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
