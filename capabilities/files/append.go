package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// Append adds the bytes of r at the end of the regular file at path, or
// makes the file (atomically, as WriteAtomic) when there is none. A final
// symlink is followed under the trust rule of resolve.go, as for a write.
//
// An append grows the file in place, so it cannot be atomic the way a
// write is; instead a failure (a full disk, a body cut short) cuts the file
// back to the size it had: it holds its old bytes, or its old bytes and all
// of the new ones. Only a daemon killed mid-append leaves a part. The
// answer's Size is the file's new size, its SHA256 that of the bytes
// appended.
func Append(path string, r io.Reader) (api.WriteResult, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return api.WriteResult{}, err
	}
	d, name, meta, err := openTarget("append", p, nil)
	if err != nil {
		return api.WriteResult{}, err
	}
	defer d.Close()
	if !meta.existed {
		return WriteAtomic(p, r, WriteOptions{})
	}
	// O_NOFOLLOW: the walk followed every final link; one swapped in since
	// is refused rather than followed unchecked.
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return api.WriteResult{}, fsError("append", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return api.WriteResult{}, fsError("append", p, err)
	}
	if !fi.Mode().IsRegular() {
		return api.WriteResult{}, api.Errorf(api.KindInvalidArgument, "append %s: %s, not a regular file", p, typeName(fi.Mode()))
	}
	old := fi.Size()
	h := sha256.New()
	n, rerr, werr := copyHashed(f, r, h, nil)
	if werr == nil && rerr == nil {
		werr = f.Sync()
	}
	if werr != nil || rerr != nil {
		cut := f.Truncate(old)
		if cut == nil {
			cut = f.Sync()
		}
		switch {
		case cut != nil:
			return api.WriteResult{}, api.Errorf(api.KindIO, "append %s: failed after %d bytes (%v), and cutting the file back to its %d bytes failed too: %w", p, n, errors.Join(werr, rerr), old, cut)
		case werr != nil:
			return api.WriteResult{}, appendError(p, old, werr)
		}
		return api.WriteResult{}, api.Errorf(api.KindTransferFailed,
			"append %s: the body ended early after %d bytes (%v); the file is back at its %d bytes", p, n, rerr, old)
	}
	return api.WriteResult{Path: p, Size: old + n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// appendError names a full disk as writeError does, saying what is left.
func appendError(path string, old int64, err error) error {
	if isDiskFull(err) {
		return api.Errorf(api.KindIO, "disk full while appending to %s; the file is back at its %d bytes", path, old).
			WithHint("free space on the Space's disk (or its quota), then retry").WithCause(err)
	}
	return fsError("append", path, err)
}

// StatFollow describes what path names once every symlink is followed, as
// stat(2) does; Stat describes a final symlink itself.
func StatFollow(path string) (api.FileInfo, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return api.FileInfo{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return api.FileInfo{}, fsError("stat", p, err)
	}
	return infoOf(p, fi), nil
}
