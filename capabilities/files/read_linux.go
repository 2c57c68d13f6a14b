package files

import (
	"os"

	"golang.org/x/sys/unix"
)

// sizeUnknown says whether f's reported size means nothing: sysfs reports
// a page (4096) for every attribute, whatever it holds.
func sizeUnknown(f *os.File) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(int(f.Fd()), &fs) == nil && fs.Type == unix.SYSFS_MAGIC
}
