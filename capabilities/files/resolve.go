package files

// Symlinks and a daemon that runs as root.
//
// A path reaches its file through directories that other users may
// control, and any of them may hold a symlink. Followed blindly, a link
// sends root's write, move or removal wherever its maker likes: a user who
// may write in /home/u plants /home/u/notes -> /etc/passwd and the daemon
// overwrites /etc/passwd. So every operation that changes the file system
// walks its path one element at a time and follows a symlink only when it
// is trusted:
//   - owned by root or by the daemon's own user, who could have made it; or
//   - owned by the user who also owns what it resolves to: such a link only
//     points us at its maker's own files, where it lets us do nothing its
//     maker could not do.
//
// Anything else answers permission_denied, naming the link and its target:
// the caller may name the target's path itself if that is what they meant.
// Each step opens the next directory relative to the one opened before, and
// the operation then works relative to the last one, so nothing swapped in
// between a check and the change can move the change elsewhere.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// maxLinkHops bounds the symlinks one path may pass through, as the
// kernel's MAXSYMLINKS does: a loop of links ends in an error, not forever.
const maxLinkHops = 40

// dirFlags open a directory to work relative to (O_PATH on Linux: search
// permission is enough, as for a path lookup).
const dirFlags = openPathFlag | unix.O_DIRECTORY | unix.O_CLOEXEC

// dir is an open directory that an operation works relative to, and the
// path it was reached by (for messages only).
type dir struct {
	fd   int
	path string
}

func (d *dir) Close() error { return unix.Close(d.fd) }

// owner returns the uid that owns the directory itself.
func (d *dir) owner() (uint32, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return 0, err
	}
	return st.Uid, nil
}

// lstat describes the entry name in d without following a symlink.
func (d *dir) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// sync makes the directory's entries durable: after a rename, the rename
// itself must survive a crash too.
func (d *dir) sync() error {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil && !errors.Is(err, unix.EINVAL) {
		// EINVAL: a file system that cannot sync directories; nothing to do.
		return err
	}
	return nil
}

// walker resolves the paths of one operation under the trust rule above.
type walker struct {
	op   string // "write", "upload", ... for messages
	euid int
	hops int
}

func newWalker(op string) *walker { return &walker{op: op, euid: os.Geteuid()} }

// trusted says whether a link owned by uid may be followed wherever it
// points: root's and our own links are the daemon's own doing.
func (w *walker) trusted(uid uint32) bool { return uid == 0 || int(uid) == w.euid }

// untrusted refuses a link whose maker does not own what it resolves to.
func (w *walker) untrusted(link, target string, linkUID, ownerUID uint32) error {
	return api.Errorf(api.KindPermissionDenied,
		"%s: %s is a symlink of uid %d to %s, which is owned by uid %d; spacesd follows another user's symlink only to that user's own files",
		w.op, link, linkUID, target, ownerUID).
		WithHint("name the target's path itself if you mean it, or remove the symlink")
}

// parent opens the directory that holds p's last element (p is clean and
// absolute, not "/") and returns it with that element's name. A missing
// directory answers not_found, as a mkdir with parents would fix.
func (w *walker) parent(p string) (*dir, string, error) {
	return w.parentMaking(p, nil)
}

// parentMaking is parent that, given a mode, makes the missing directories
// on the way with it (as mkdir -p does, the umask applying).
func (w *walker) parentMaking(p string, mode *uint32) (*dir, string, error) {
	parentPath, name := path.Split(p)
	d, err := w.walkMaking(nil, parentPath, mode)
	if err != nil {
		var ae *api.Error
		switch {
		case errors.As(err, &ae):
			return nil, "", ae
		case errors.Is(err, fs.ErrNotExist):
			return nil, "", api.Errorf(api.KindNotFound, "%s %s: the directory %s does not exist", w.op, p, path.Clean(parentPath)).
				WithHint("make it first (mkdir with parents=true)")
		case errors.Is(err, unix.ENOTDIR):
			return nil, "", api.Errorf(api.KindInvalidArgument, "%s %s: %s is not a directory", w.op, p, path.Clean(parentPath))
		}
		return nil, "", fsError(w.op, p, err)
	}
	return d, name, nil
}

// walk resolves p, absolute or relative to at, to a directory, following
// the symlinks on the way that may be followed.
func (w *walker) walk(at *dir, p string) (*dir, error) { return w.walkMaking(at, p, nil) }

// walkMaking is walk that, given a mode, makes missing directories.
func (w *walker) walkMaking(at *dir, p string, mode *uint32) (*dir, error) {
	var cur *dir
	var err error
	if at == nil || path.IsAbs(p) {
		cur, err = openRoot()
	} else {
		cur, err = at.dup()
	}
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(p, "/") {
		if name == "" || name == "." {
			continue
		}
		next, err := w.step(cur, name)
		if mode != nil && errors.Is(err, fs.ErrNotExist) {
			// Made by someone else meanwhile is as good as made by us.
			if err = unix.Mkdirat(cur.fd, name, *mode); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = w.step(cur, name)
			}
		}
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// step goes from d into its entry name, a directory or a symlink to one.
func (w *walker) step(d *dir, name string) (*dir, error) {
	shown := path.Join(d.path, name)
	e, err := openEntry(d.fd, name)
	if err != nil {
		return nil, err
	}
	switch e.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return e.dir(shown)
	case unix.S_IFLNK:
		defer e.Close()
		if w.hops++; w.hops > maxLinkHops {
			return nil, unix.ELOOP
		}
		target, err := e.readlink(d.fd, name)
		if err != nil {
			return nil, err
		}
		to, err := w.walk(d, target)
		if err != nil {
			return nil, err
		}
		if !w.trusted(e.st.Uid) {
			owner, err := to.owner()
			if err == nil && owner != e.st.Uid {
				err = w.untrusted(shown, target, e.st.Uid, owner)
			}
			if err != nil {
				to.Close()
				return nil, err
			}
		}
		return to, nil
	}
	e.Close()
	return nil, unix.ENOTDIR
}

// final resolves where an operation on name in d lands when a final
// symlink is to be followed (a write, as a shell's > does): name itself
// when it is no symlink (or is missing), else the place its target names,
// which need not exist yet. d is consumed; the answer's dir is the caller's.
func (w *walker) final(d *dir, name string) (*dir, string, error) {
	type link struct {
		path, target string
		uid          uint32
	}
	var untrusted []link
	for {
		e, err := openEntry(d.fd, name)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			d.Close()
			return nil, "", err
		}
		isLink := e.st.Mode&unix.S_IFMT == unix.S_IFLNK
		var target string
		if isLink {
			target, err = e.readlink(d.fd, name)
		}
		e.Close()
		if !isLink {
			break
		}
		if err != nil {
			d.Close()
			return nil, "", err
		}
		if w.hops++; w.hops > maxLinkHops {
			d.Close()
			return nil, "", unix.ELOOP
		}
		if !w.trusted(e.st.Uid) {
			untrusted = append(untrusted, link{path.Join(d.path, name), target, e.st.Uid})
		}
		parentPath, base := path.Split(target)
		if base == "" || base == "." || base == ".." {
			d.Close()
			return nil, "", unix.EISDIR
		}
		next, err := w.walk(d, parentPath)
		d.Close()
		if err != nil {
			return nil, "", err
		}
		d, name = next, base
	}
	if len(untrusted) > 0 {
		// What the chain resolves to: the file, or the directory that
		// will hold it. Every untrusted link on the way must be its
		// owner's.
		var owner uint32
		st, err := d.lstat(name)
		if err == nil {
			owner = st.Uid
		} else if errors.Is(err, fs.ErrNotExist) {
			owner, err = d.owner()
		}
		if err != nil {
			d.Close()
			return nil, "", err
		}
		for _, l := range untrusted {
			if l.uid != owner {
				d.Close()
				return nil, "", w.untrusted(l.path, l.target, l.uid, owner)
			}
		}
	}
	return d, name, nil
}

func openRoot() (*dir, error) {
	fd, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return nil, err
	}
	return &dir{fd: fd, path: "/"}, nil
}

func (d *dir) dup() (*dir, error) {
	fd, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &dir{fd: fd, path: d.path}, nil
}

// unixMode converts a mode to the bits chmod(2) takes.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	return u
}

// kindName names the type of a stat'ed entry for a message.
func kindName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a device"
	}
	return fmt.Sprintf("type %o", mode&unix.S_IFMT)
}

// readlinkat reads a symlink's target, whatever its length.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
