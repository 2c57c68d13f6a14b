package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// firstInheritedFD is the first descriptor that is not stdin, stdout or
// stderr: the three a child is given on purpose.
const firstInheritedFD = 3

// closeInheritedOnExec marks every descriptor the daemon inherited past
// stderr close-on-exec, so that no process it starts sees them (a parent
// shell's pipe, a supervisor's /dev/null): Go opens its own descriptors
// close-on-exec, but keeps the inherited ones as they came. They stay open
// in the daemon. A descriptor the daemon passes on on purpose is made
// inheritable after this, where it is made (the token pipe of
// reexecWithoutToken).
func closeInheritedOnExec() error {
	if err := closeRangeOnExec(firstInheritedFD); err == nil {
		return nil
	}
	return walkOnExec(firstInheritedFD)
}

// walkOnExec sets FD_CLOEXEC on each open descriptor from first on, as the
// system lists them (/proc/self/fd on Linux, /dev/fd elsewhere).
func walkOnExec(first int) error {
	dir := "/dev/fd"
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		dir = "/proc/self/fd"
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("list the inherited descriptors: %w", err)
	}
	defer d.Close() // itself close-on-exec, as Go opens it
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("list the inherited descriptors: %w", err)
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd < first {
			continue
		}
		// One that closed since it was listed (the listing's own) fails
		// with EBADF: nothing to mark.
		if err := setCloseOnExec(fd); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}

func setCloseOnExec(fd int) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		return err
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC)
	return err
}
