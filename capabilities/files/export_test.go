package files

import (
	"context"
	"io"

	"github.com/trycua/cua-spacesd/api"
)

// WriteAtomicNamed is WriteAtomic on the named temp file that file systems
// without O_TMPFILE get. No file system at hand lacks O_TMPFILE (tmpfs and
// ext4 both have it), so the tests force that path to cover it.
func WriteAtomicNamed(path string, r io.Reader, opt WriteOptions) (api.WriteResult, error) {
	opt.namedTemp = true
	return WriteAtomic(path, r, opt)
}

// OpenWithCap is Open with a smaller cap on files that do not know their
// size, so that a real /proc file can go past it.
func OpenWithCap(path string, maxUnsized int64) (*Content, error) {
	return open(context.Background(), path, maxUnsized)
}
