package main

import "golang.org/x/sys/unix"

// closeRangeOnExec marks descriptors first and up close-on-exec in one
// call (close_range(2) with CLOSE_RANGE_CLOEXEC, Linux 5.11 and later); an
// older kernel answers ENOSYS or EINVAL, and the caller walks the list.
func closeRangeOnExec(first int) error {
	return unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
