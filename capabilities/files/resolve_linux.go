package files

import "golang.org/x/sys/unix"

// openPathFlag opens a directory for lookups only: search permission is
// enough, as for a path walk by the kernel.
const openPathFlag = unix.O_PATH

// entry is one directory entry, opened without following a symlink, so
// that its owner, its type and a symlink's target all come from one inode.
type entry struct {
	fd int
	st unix.Stat_t
}

func openEntry(dirfd int, name string) (entry, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return entry{fd: -1}, err
	}
	e := entry{fd: fd}
	if err := unix.Fstat(fd, &e.st); err != nil {
		unix.Close(fd)
		return entry{fd: -1}, err
	}
	return e, nil
}

func (e *entry) Close() {
	if e.fd >= 0 {
		unix.Close(e.fd)
		e.fd = -1
	}
}

// dir hands the entry's descriptor over as a directory to work in.
func (e *entry) dir(shown string) (*dir, error) {
	d := &dir{fd: e.fd, path: shown}
	e.fd = -1
	return d, nil
}

// readlink reads the target of the very link whose owner was checked.
func (e *entry) readlink(int, string) (string, error) { return readlinkat(e.fd, "") }
