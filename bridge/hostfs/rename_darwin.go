package hostfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames in one step, failing with EEXIST if newname
// exists (renameatx_np with RENAME_EXCL, macOS 10.12 and later).
func renameNoReplace(dirfd int, oldname, newname string) error {
	err := unix.RenameatxNp(dirfd, oldname, dirfd, newname, unix.RENAME_EXCL)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOTSUP) {
		return errNoReplaceUnsupported
	}
	return err
}
