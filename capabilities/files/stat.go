package files

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trycua/cua-spacesd/api"
)

// Stat describes one path without following a final symlink, so a dangling
// link is still reported (as a symlink with its target).
func Stat(path string) (api.FileInfo, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return api.FileInfo{}, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return api.FileInfo{}, fsError("stat", p, err)
	}
	return infoOf(p, fi), nil
}

// infoOf converts an fs.FileInfo to its wire form.
func infoOf(path string, fi fs.FileInfo) api.FileInfo {
	out := api.FileInfo{
		Path:     path,
		Name:     filepath.Base(path),
		Size:     fi.Size(),
		Mode:     api.FileModeString(fi.Mode()),
		Modified: fi.ModTime().UTC(),
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		out.Type = api.TypeFile
	case m.IsDir():
		out.Type = api.TypeDir
	case m&fs.ModeSymlink != 0:
		out.Type = api.TypeSymlink
		out.Target, _ = os.Readlink(path)
	default:
		out.Type = api.TypeOther
	}
	return out
}
