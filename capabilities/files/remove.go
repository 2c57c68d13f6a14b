package files

import (
	"errors"
	"os"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
)

// Remove deletes a file, a symlink (not its target) or a directory. A
// non-empty directory needs Recursive; "/" is always refused.
func Remove(req api.RemoveRequest) error {
	r, err := CheckRemove(req)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(r.Path)
	if err != nil {
		return fsError("remove", r.Path, err)
	}
	if fi.IsDir() && r.Recursive {
		err = os.RemoveAll(r.Path)
	} else {
		err = os.Remove(r.Path)
	}
	if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return api.Errorf(api.KindPreconditionFailed, "remove %s: directory not empty; pass recursive=true to remove it and everything in it", r.Path)
	}
	if err != nil {
		return fsError("remove", r.Path, err)
	}
	return nil
}
