package hostfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames in one step, failing with EEXIST if newname
// exists. File systems without RENAME_NOREPLACE answer EINVAL.
func renameNoReplace(dirfd int, oldname, newname string) error {
	err := unix.Renameat2(dirfd, oldname, dirfd, newname, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOTSUP) {
		return errNoReplaceUnsupported
	}
	return err
}
