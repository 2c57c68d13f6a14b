package files

import (
	"errors"
	"io/fs"
	"os"
)

// renameCheckFirst is the portable no-replace rename: a short race remains
// between the check and the rename.
func renameCheckFirst(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return os.ErrExist
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(from, to)
}
