package transfer

import (
	"io/fs"
	"path/filepath"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
)

// Save writes data to the local file dest the way a download lands: a
// temporary file next to it, fsync, then one step into place by the policy
// (Rename is not for Save: a caller names its file). It answers where the
// file landed.
func Save(h *hostfs.FS, dest string, data []byte, mode fs.FileMode, policy OnExists) (string, error) {
	local, err := h.Abs(dest)
	if err != nil {
		return "", err
	}
	dir, err := h.OpenDir(filepath.Dir(local), false)
	if err != nil {
		return "", err
	}
	defer dir.Close()
	name := filepath.Base(local)
	tmp, f, err := dir.CreateTemp(shortName(name, ".", 12))
	if err != nil {
		return "", err
	}
	placed := false
	defer func() {
		f.Close()
		if !placed {
			_ = dir.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return "", api.Errorf(api.KindIO, "write %s: %w", f.Name(), err)
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		return "", api.Errorf(api.KindIO, "chmod %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return "", api.Errorf(api.KindIO, "fsync %s: %w", f.Name(), err)
	}
	final, err := place(dir, tmp, name, policy, false)
	if err != nil {
		return "", err
	}
	placed = true
	if err := dir.Sync(); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(local), final), nil
}
