//go:build unix

package server

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileEpoch names an open token file's installation: its change time
// (ctime) and inode. The kernel sets the ctime on every write and rename,
// and no tool that copies times (cp -p, touch -d) can set it back; the
// inode tells apart two files written within one tick of a coarse clock.
// A rewritten token file thus always gets a new epoch, a file left alone
// keeps its own across restarts.
func fileEpoch(f *os.File) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return mixEpoch(st.Ctim.Nano(), uint64(st.Dev), uint64(st.Ino)), nil
}
