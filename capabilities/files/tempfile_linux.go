package files

import (
	"errors"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens an unnamed file in d (O_TMPFILE): it vanishes with the
// last descriptor unless linked, so a crash cannot leave it behind.
// Without O_EXCL, so that it may be linked.
func openUnnamed(d *dir) (*os.File, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), path.Join(d.path, ".")), nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		// The file system (EOPNOTSUPP) or the kernel (EISDIR, EINVAL:
		// older than 3.11) cannot: use a named temp file.
		return nil, errNoUnnamed
	}
	return nil, err
}

// linkUnnamed gives the unnamed file f the name name in d. Through
// /proc/self/fd any user may; AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH
// (root outside a container), for when /proc is not mounted.
func linkUnnamed(f *os.File, d *dir, name string) error {
	fd := int(f.Fd())
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), d.fd, name, unix.AT_SYMLINK_FOLLOW)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return err
	}
	err = unix.Linkat(fd, "", d.fd, name, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) {
		return errCannotLink
	}
	return err
}
