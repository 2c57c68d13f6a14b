package files

import (
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// adoptPartial opens the partial file an earlier daemon left at name in
// d. Only a regular file with one link, owned by us and not longer than the
// upload, is adopted; anything else at that name (a symlink, a hard link to
// another file, a FIFO, someone else's file) is not ours to write into: it
// is removed and the upload starts afresh from an empty file of our own.
func adoptPartial(d *dir, name string, size int64) (*os.File, error) {
	f, err := openFileAt(d, name, os.O_RDWR)
	if err == nil {
		fi, err := f.Stat()
		if err == nil && isOurs(fi) && fi.Size() <= size {
			return f, nil
		}
		f.Close()
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return createAt(d, name)
}

// openFileAt opens name in d without following a symlink, and without
// waiting on a FIFO planted there.
func openFileAt(d *dir, name string, flags int) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path.Join(d.path, name)), nil
}

// isOurs: a regular file with one link, owned by the daemon's user.
func isOurs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && uint64(st.Nlink) == 1 && int(st.Uid) == os.Geteuid()
}

// openPartial opens the upload's partial file, which must still be the
// very file it made or adopted.
func (u *upload) openPartial(flags int) (*os.File, error) {
	f, err := openFileAt(u.dir, u.partial, flags)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	if uint64(st.Dev) != u.dev || uint64(st.Ino) != u.ino || !isOurs(fi) {
		f.Close()
		return nil, errPartialReplaced
	}
	return f, nil
}

// errPartialReplaced: something else now sits at the partial file's name.
var errPartialReplaced = errors.New("the partial file was replaced")

// removePartial removes the partial file if it is still ours.
func (u *upload) removePartial() {
	if f, err := u.openPartial(os.O_RDONLY); err == nil {
		f.Close()
		_ = unix.Unlinkat(u.dir.fd, u.partial, 0)
	}
}

// syncHash rebuilds the running hash from the partial file when it does not
// cover the file's bytes (an upload adopted after a restart).
func (u *upload) syncHash() error {
	if u.h != nil && u.hashed == u.offset {
		return nil
	}
	f, err := u.openPartial(os.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, rerr, _ := copyHashed(io.Discard, io.LimitReader(f, u.offset), h, nil)
	if rerr != nil {
		return rerr
	}
	if n != u.offset {
		return api.Errorf(api.KindIO, "upload %s: its partial file holds %d bytes, %d expected", u.op.Path, n, u.offset)
	}
	u.h, u.hashed = h, n
	return nil
}
