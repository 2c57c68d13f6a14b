//go:build !linux

package files

import "golang.org/x/sys/unix"

// openPathFlag: without O_PATH, a directory is opened for reading.
const openPathFlag = unix.O_RDONLY

// entry is one directory entry, described without following a symlink.
// Without O_PATH a symlink cannot be opened itself, so its target is read
// by name: a short race remains between the stat and that read.
type entry struct {
	fd int
	st unix.Stat_t
}

func openEntry(dirfd int, name string) (entry, error) {
	e := entry{fd: -1}
	if err := unix.Fstatat(dirfd, name, &e.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return e, err
	}
	if e.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return e, nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return e, err
	}
	e.fd = fd
	if err := unix.Fstat(fd, &e.st); err != nil {
		e.Close()
		return e, err
	}
	return e, nil
}

func (e *entry) Close() {
	if e.fd >= 0 {
		unix.Close(e.fd)
		e.fd = -1
	}
}

func (e *entry) dir(shown string) (*dir, error) {
	d := &dir{fd: e.fd, path: shown}
	e.fd = -1
	return d, nil
}

func (e *entry) readlink(dirfd int, name string) (string, error) { return readlinkat(dirfd, name) }
