package files

import (
	"errors"
	"io/fs"
	"os"

	"github.com/trycua/cua-spacesd/spacesd/api"
)

// Mkdir makes a directory (with its parents when asked). An existing
// directory is fine with parents (as mkdir -p), refused without.
func Mkdir(req api.MkdirRequest) error {
	op, err := CheckMkdir(req)
	if err != nil {
		return err
	}
	if op.Parents {
		err = os.MkdirAll(op.Path, op.Mode)
	} else {
		err = os.Mkdir(op.Path, op.Mode)
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
