package files

import (
	"errors"
	"os"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
)

// Move renames a file or directory. Without Overwrite an existing
// destination is refused (precondition_failed), atomically where the
// kernel can (renameat2 RENAME_NOREPLACE on Linux).
func Move(req api.MoveRequest) error {
	r, err := CheckMove(req)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(r.From); err != nil {
		return fsError("move", r.From, err)
	}
	if r.Overwrite {
		err = os.Rename(r.From, r.To)
	} else {
		err = renameNoReplace(r.From, r.To)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrExist):
		return errDestExists("move", r.To)
	case errors.Is(err, syscall.EXDEV):
		return api.Errorf(api.KindInvalidArgument, "move %s -> %s: different file systems; copy, then remove the source", r.From, r.To)
	case errors.Is(err, syscall.ENOTEMPTY):
		return api.Errorf(api.KindPreconditionFailed, "move %s -> %s: the destination is a non-empty directory", r.From, r.To)
	}
	return fsError("move", r.From+" -> "+r.To, err)
}

func errDestExists(op, path string) error {
	return api.Errorf(api.KindPreconditionFailed, "%s %s: the destination exists; pass overwrite=true to replace it", op, path).
		WithHint("pass overwrite=true, or pick another destination")
}
