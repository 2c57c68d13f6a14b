package desktop

import (
	"fmt"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/spacesd/api"
)

// shmSeg is one System V shared memory segment attached by both the daemon
// and the X server: a screenshot lands there without travelling through
// the socket.
type shmSeg struct {
	mu  sync.Mutex // one capture at a time uses the buffer
	seg shm.Seg
	buf []byte
}

// newShmSeg creates and attaches a segment of size bytes and proves that the
// server can write into it (a remote or sandboxed server cannot).
func newShmSeg(c *xgb.Conn, root xproto.Window, size int) (*shmSeg, error) {
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
	if err != nil {
		return nil, fmt.Errorf("shmget %d bytes: %w", size, err)
	}
	// Marked for removal at once: the kernel frees the segment when the
	// last of the daemon and the server detaches, even after a crash.
	defer func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) }()
	buf, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("shmat: %w", err)
	}
	seg, err := shm.NewSegId(c)
	if err != nil {
		_ = unix.SysvShmDetach(buf)
		return nil, fmt.Errorf("new segment id: %w", err)
	}
	if err := shm.AttachChecked(c, seg, uint32(id), false).Check(); err != nil {
		_ = unix.SysvShmDetach(buf)
		return nil, fmt.Errorf("server attach: %w", err)
	}
	s := &shmSeg{seg: seg, buf: buf}
	if _, err := shm.GetImage(c, xproto.Drawable(root), 0, 0, 1, 1, ^uint32(0), xproto.ImageFormatZPixmap, seg, 0).Reply(); err != nil {
		s.close(c)
		return nil, fmt.Errorf("test capture: %w", err)
	}
	return s, nil
}

// maxShmBytes bounds the segment when it grows for a bigger screen (an 8K
// screen fits); a larger capture goes through core GetImage instead.
const maxShmBytes = 256 << 20

// capture reads a w x h area of d at (sx, sy) through the segment into dst
// as RGBA. It grows the segment when the area no longer fits (the screen
// grew through RandR); ok is false when the segment cannot be used, and the
// caller then falls back to core GetImage.
func (s *shmSeg) capture(x *xconn, d xproto.Drawable, sx, sy, w, h int, dst []byte) (ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := w * h * 4
	// Only the screen grows it: a big window's capture must not pin a
	// segment of its size for the rest of the connection.
	if s.buf != nil && n > len(s.buf) && n <= maxShmBytes && d == xproto.Drawable(x.root) {
		if err := s.growLocked(x.c, x.root, n); err != nil {
			x.log.Info("MIT-SHM segment cannot grow; this capture uses GetImage", "bytes", n, "err", err)
		}
	}
	if s.buf == nil || n > len(s.buf) {
		return false, nil
	}
	r, err := shm.GetImage(x.c, d, int16(sx), int16(sy), uint16(w), uint16(h), ^uint32(0), xproto.ImageFormatZPixmap, s.seg, 0).Reply()
	if err != nil {
		return true, xerr("capture (MIT-SHM)", err)
	}
	if r.Size < uint32(n) {
		return true, api.Errorf(api.KindEnv, "capture: the display's depth %d is not a 32-bit pixel format", r.Depth)
	}
	bgrxToRGBA(dst, s.buf[:n])
	return true, nil
}

// growLocked replaces the segment by one of size bytes; on failure the old
// one stays.
func (s *shmSeg) growLocked(c *xgb.Conn, root xproto.Window, size int) error {
	n, err := newShmSeg(c, root, size)
	if err != nil {
		return err
	}
	_ = shm.DetachChecked(c, s.seg).Check()
	_ = unix.SysvShmDetach(s.buf)
	s.seg, s.buf = n.seg, n.buf
	return nil
}

func (s *shmSeg) close(c *xgb.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf == nil {
		return
	}
	_ = shm.DetachChecked(c, s.seg).Check()
	_ = unix.SysvShmDetach(s.buf)
	s.buf = nil
}
