package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trycua/cua-spacesd/api"
)

// Mkdir makes a directory (with its parents when asked). An existing
// directory is fine with parents (as mkdir -p), refused without.
func Mkdir(req api.MkdirRequest) error {
	op, err := CheckMkdir(req)
	if err != nil {
		return err
	}
	err = os.Mkdir(op.Path, op.Mode)
	if op.Parents && errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(op.Path), op.Mode); err == nil {
			err = os.Mkdir(op.Path, op.Mode)
		}
	}
	if op.Parents && errors.Is(err, fs.ErrExist) {
		// As mkdir -p: an existing directory (or a symlink to one) is
		// fine, and keeps its mode: the mode is only for what we make.
		fi, serr := os.Stat(op.Path)
		if serr == nil && fi.IsDir() {
			return nil
		}
		return api.Errorf(api.KindInvalidArgument, "mkdir %s: exists and is not a directory", op.Path)
	}
	if errors.Is(err, fs.ErrExist) {
		return api.Errorf(api.KindPreconditionFailed, "mkdir %s: already exists", op.Path).
			WithHint("pass parents=true to accept an existing directory")
	}
	if err != nil {
		return fsError("mkdir", op.Path, err)
	}
	if op.ModeGiven {
		// A mode the caller names is applied exactly, past the umask.
		if err := os.Chmod(op.Path, op.Mode); err != nil {
			return fsError("mkdir", op.Path, err)
		}
	}
	return nil
}
