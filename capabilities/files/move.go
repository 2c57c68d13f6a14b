package files

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// Move renames a file or directory. Without Overwrite an existing
// destination is refused (precondition_failed), atomically where the
// kernel can (renameat2 RENAME_NOREPLACE on Linux). A symlink named by
// from or to is moved or replaced itself; symlinks in the directories on
// the way are followed under the trust rule of resolve.go.
func Move(req api.MoveRequest) error {
	r, err := CheckMove(req)
	if err != nil {
		return err
	}
	fromDir, from, err := newWalker("move").parent(r.From)
	if err != nil {
		return err
	}
	defer fromDir.Close()
	if _, err := fromDir.lstat(from); err != nil {
		return fsError("move", r.From, err)
	}
	toDir, to, err := newWalker("move").parent(r.To)
	if err != nil {
		return err
	}
	defer toDir.Close()
	if r.Overwrite {
		err = unix.Renameat(fromDir.fd, from, toDir.fd, to)
	} else {
		err = renameNoReplace(fromDir, from, toDir, to)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrExist):
		return errDestExists("move", r.To)
	case errors.Is(err, unix.EXDEV):
		return api.Errorf(api.KindInvalidArgument, "move %s -> %s: different file systems; copy, then remove the source", r.From, r.To)
	case errors.Is(err, unix.ENOTEMPTY):
		return api.Errorf(api.KindPreconditionFailed, "move %s -> %s: the destination is a non-empty directory", r.From, r.To)
	case errors.Is(err, unix.EINVAL):
		// Through symlinks, "into itself" is only the kernel's to see.
		return api.Errorf(api.KindInvalidArgument, "move %s -> %s: a directory cannot move into itself", r.From, r.To)
	}
	return fsError("move", r.From+" -> "+r.To, err)
}

func errDestExists(op, path string) error {
	return api.Errorf(api.KindPreconditionFailed, "%s %s: the destination exists; pass overwrite=true to replace it", op, path).
		WithHint("pass overwrite=true, or pick another destination")
}
