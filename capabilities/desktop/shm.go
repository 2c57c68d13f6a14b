package desktop

import (
	"fmt"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"
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
