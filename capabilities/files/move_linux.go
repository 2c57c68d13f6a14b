package files

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames unless to exists, in one syscall so that nothing
// created between a check and the rename is replaced. File systems without
// RENAME_NOREPLACE get the check-then-rename fallback.
func renameNoReplace(fromDir *dir, from string, toDir *dir, to string) error {
	err := unix.Renameat2(fromDir.fd, from, toDir.fd, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return os.ErrExist
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return renameCheckFirst(fromDir, from, toDir, to)
	}
	return err
}
