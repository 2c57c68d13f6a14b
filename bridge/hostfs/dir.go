package hostfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// maxTempTries bounds the search for a free temporary name.
const maxTempTries = 100

// Dir is an open local directory. Every operation names an entry of it (one
// path component) or a relative path walked one component at a time, and
// none follows a symlink: a link in the way fails the call (ELOOP). So what
// happens in the directory cannot be redirected by a link planted in it,
// and a directory renamed or replaced meanwhile is not the one written.
type Dir struct {
	h    *FS
	f    *os.File
	path string // for messages
}

// Path is where the directory was opened, for messages.
func (d *Dir) Path() string { return d.path }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

func (d *Dir) fd() int { return int(d.f.Fd()) }

func (d *Dir) at(name string) string { return filepath.Join(d.path, name) }

// checkName refuses what is not one plain path component.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') || strings.ContainsRune(name, 0) {
		return api.Errorf(api.KindInvalidArgument, "%q is not a file name", name)
	}
	return nil
}

// refuseDenied refuses an opened file or directory that is (now) one the FS
// denies, whatever path led to it.
func (d *Dir) refuseDenied(f *os.File) error {
	if len(d.h.deny) == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return pathError("stat", f.Name(), err)
	}
	if den, ok := d.h.deniedID(idOf(&st)); ok {
		return api.Errorf(api.KindInvalidArgument, "%s is %s (%s), which the MCP tools never read or write", f.Name(), den.what, den.path)
	}
	return nil
}

// Sub opens the directory name in d.
func (d *Dir) Sub(name string) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathError("open", d.at(name), err)
	}
	sub := &Dir{h: d.h, f: os.NewFile(uintptr(fd), d.at(name)), path: d.at(name)}
	if err := d.refuseDenied(sub.f); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// OpenDir opens the directory rel below d.
func (d *Dir) OpenDir(rel string) (*Dir, error) { return d.openDirs(rel, false) }

// MkdirAll opens the directory rel below d, making what is missing (0755).
func (d *Dir) MkdirAll(rel string) (*Dir, error) { return d.openDirs(rel, true) }

func (d *Dir) openDirs(rel string, parents bool) (*Dir, error) {
	cur := d
	for _, name := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if name == "." {
			continue
		}
		if parents {
			if err := unix.Mkdirat(cur.fd(), name, uint32(dirPerm)); err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, closeAnd(cur, d, pathError("mkdir", cur.at(name), err))
			}
		}
		next, err := cur.Sub(name)
		if err != nil {
			return nil, closeAnd(cur, d, err)
		}
		if cur != d {
			cur.Close()
		}
		cur = next
	}
	if cur == d {
		// rel was "."; hand out a directory the caller may close.
		return d.dup()
	}
	return cur, nil
}

// dup opens d again, as a Dir of its own.
func (d *Dir) dup() (*Dir, error) {
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathError("open", d.path, err)
	}
	return &Dir{h: d.h, f: os.NewFile(uintptr(fd), d.path), path: d.path}, nil
}

// closeAnd closes cur unless it is the caller's own d, and returns err.
func closeAnd(cur, d *Dir, err error) error {
	if cur != d {
		cur.Close()
	}
	return err
}

// Mkdir makes the directory name in d.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Mkdirat(d.fd(), name, uint32(perm.Perm())); err != nil {
		return pathError("mkdir", d.at(name), err)
	}
	return nil
}

// MkdirTemp makes a new directory (0700) named prefix + random in d.
func (d *Dir) MkdirTemp(prefix string) (string, *Dir, error) {
	for range maxTempTries {
		name := prefix + randomSuffix()
		err := unix.Mkdirat(d.fd(), name, 0o700)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", nil, pathError("mkdir", d.at(name), err)
		}
		sub, err := d.Sub(name)
		if err != nil {
			_ = unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR)
			return "", nil, err
		}
		return name, sub, nil
	}
	return "", nil, api.Errorf(api.KindIO, "no free temporary name %s* in %s", prefix, d.path)
}

// CreateTemp makes a new file (0600) named prefix + random in d.
func (d *Dir) CreateTemp(prefix string) (string, *os.File, error) {
	for range maxTempTries {
		name := prefix + randomSuffix()
		f, err := d.Create(name, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, api.Errorf(api.KindIO, "no free temporary name %s* in %s", prefix, d.path)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// OpenFile opens name in d with flag (O_NOFOLLOW and O_CLOEXEC added): a
// symlink at name fails the open rather than being followed.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(d.fd(), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, pathError("open", d.at(name), err)
	}
	f := os.NewFile(uintptr(fd), d.at(name))
	if err := d.refuseDenied(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Open opens name in d to read it. A FIFO or device does not block the open
// (O_NONBLOCK): the caller looks at what it got before reading.
func (d *Dir) Open(name string) (*os.File, error) {
	return d.OpenFile(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
}

// Create makes a new file name in d; it fails if anything is there,
// a dangling symlink included.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	return d.OpenFile(name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, perm)
}

// Info is what Lstat tells of an entry.
type Info struct {
	// Mode holds the type bits (fs.ModeSymlink for a link) and the
	// permission bits.
	Mode fs.FileMode
	Size int64
}

// Lstat describes name in d, not following a symlink.
func (d *Dir) Lstat(name string) (Info, error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Info{}, pathError("stat", d.at(name), err)
	}
	return Info{Mode: typeOf(uint32(st.Mode)) | fs.FileMode(st.Mode&0o777), Size: st.Size}, nil
}

// Exists reports whether anything (a dangling symlink too) is at name.
func (d *Dir) Exists(name string) (bool, error) {
	_, err := d.Lstat(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// Names lists d's entries.
func (d *Dir) Names() ([]string, error) {
	// A fresh descriptor: reading entries moves the offset of the one read.
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathError("open", d.path, err)
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, pathError("list", d.path, err)
	}
	return names, nil
}

// Link makes newname in d a hard link to oldname in d; it fails if
// newname exists.
func (d *Dir) Link(oldname, newname string) error {
	if err := errors.Join(checkName(oldname), checkName(newname)); err != nil {
		return err
	}
	if err := unix.Linkat(d.fd(), oldname, d.fd(), newname, 0); err != nil {
		return pathError("link", d.at(newname), err)
	}
	return nil
}

// Rename renames oldname to newname in d, replacing a file at newname.
func (d *Dir) Rename(oldname, newname string) error {
	if err := errors.Join(checkName(oldname), checkName(newname)); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), oldname, d.fd(), newname); err != nil {
		return pathError("rename", d.at(newname), err)
	}
	return nil
}

// RenameNoReplace renames oldname to newname in d, and fails (an error
// matching fs.ErrExist) if anything is at newname, an empty directory
// made meanwhile included: the check and the rename are one step where the
// system has one (renameat2 RENAME_NOREPLACE on Linux, renameatx_np
// RENAME_EXCL on macOS).
func (d *Dir) RenameNoReplace(oldname, newname string) error {
	if err := errors.Join(checkName(oldname), checkName(newname)); err != nil {
		return err
	}
	err := renameNoReplace(d.fd(), oldname, newname)
	if errors.Is(err, errNoReplaceUnsupported) {
		// The file system cannot do it in one step: check, then rename.
		// Between the two, a name made by someone else may be replaced.
		if ok, xerr := d.Exists(newname); xerr != nil {
			return xerr
		} else if ok {
			return pathError("rename", d.at(newname), unix.EEXIST)
		}
		err = unix.Renameat(d.fd(), oldname, d.fd(), newname)
	}
	if err != nil {
		return pathError("rename", d.at(newname), err)
	}
	return nil
}

// errNoReplaceUnsupported says the system or file system has no atomic
// no-replace rename.
var errNoReplaceUnsupported = errors.New("no-replace rename not supported")

// Remove removes the file, symlink or empty directory name in d.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd(), name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		err = unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return pathError("remove", d.at(name), err)
	}
	return nil
}

// RemoveAll removes name in d and, for a directory, everything in it,
// never following a symlink (a link is removed, not what it points at).
func (d *Dir) RemoveAll(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd(), name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return pathError("remove", d.at(name), err)
	}
	sub, err := d.Sub(name)
	if err != nil {
		return err
	}
	// A folder made read-only (a download keeps the Space's modes) must
	// still be emptied.
	_ = sub.Chmod(0o700)
	names, err := sub.Names()
	if err == nil {
		for _, n := range names {
			if rerr := sub.RemoveAll(n); rerr != nil && err == nil {
				err = rerr
			}
		}
	}
	sub.Close()
	if err != nil {
		return err
	}
	return d.Remove(name)
}

// Symlink makes name in d a symlink to target (kept as given).
func (d *Dir) Symlink(target, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Symlinkat(target, d.fd(), name); err != nil {
		return pathError("symlink", d.at(name), err)
	}
	return nil
}

// Chmod sets d's own permission bits.
func (d *Dir) Chmod(mode fs.FileMode) error {
	if err := d.f.Chmod(mode.Perm()); err != nil {
		return pathError("chmod", d.path, err)
	}
	return nil
}

// Sync flushes d's entries (a rename or link into it) to disk.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil {
		return pathError("fsync", d.path, err)
	}
	return nil
}

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} }

// typeOf converts the type bits of a stat mode.
func typeOf(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
