package files

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameCheckFirst is the portable no-replace rename: a short race remains
// between the check and the rename.
func renameCheckFirst(fromDir *dir, from string, toDir *dir, to string) error {
	if _, err := toDir.lstat(to); err == nil {
		return os.ErrExist
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return unix.Renameat(fromDir.fd, from, toDir.fd, to)
}
