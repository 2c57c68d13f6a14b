package desktop

import (
	"context"
	"fmt"

	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// shmSeg is one System V shared memory segment attached by both the daemon
// and the X server: a screenshot lands there without travelling through
// the socket.
type shmSeg struct {
	// use is held by one capture at a time, from before its request until
	// the pixels are copied out; a capture abandoned by its caller keeps it
	// until the server answers or the connection is dropped, so the server
	// never writes into a buffer another capture reads.
	use semaphore
	seg shm.Seg
	buf []byte
}

// newShmSeg creates and attaches a segment of size bytes and proves that the
// server can write into it (a remote or sandboxed server cannot).
func newShmSeg(ctx context.Context, x *xconn, size int) (*shmSeg, error) {
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
	s := &shmSeg{use: newSemaphore(), buf: buf}
	err = x.do(ctx, "attach MIT-SHM segment", func() error {
		seg, err := shm.NewSegId(x.c)
		if err != nil {
			return fmt.Errorf("new segment id: %w", err)
		}
		if err := shm.AttachChecked(x.c, seg, uint32(id), false).Check(); err != nil {
			return fmt.Errorf("server attach: %w", err)
		}
		s.seg = seg
		if _, err := shm.GetImage(x.c, xproto.Drawable(x.root), 0, 0, 1, 1, ^uint32(0), xproto.ImageFormatZPixmap, seg, 0).Reply(); err != nil {
			return fmt.Errorf("test capture: %w", err)
		}
		return nil
	})
	if err != nil {
		// The server may still hold the segment (an abandoned attach); it
		// is marked for removal, so it goes when the connection does.
		_ = unix.SysvShmDetach(buf)
		return nil, err
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
func (s *shmSeg) capture(ctx context.Context, x *xconn, d xproto.Drawable, sx, sy, w, h int, dst []byte) (ok bool, err error) {
	if s.use.acquire(ctx) != nil {
		return true, x.ctxErr(ctx, "wait for another capture")
	}
	n := w * h * 4
	// Only the screen grows it: a big window's capture must not pin a
	// segment of its size for the rest of the connection.
	if s.buf != nil && n > len(s.buf) && n <= maxShmBytes && d == xproto.Drawable(x.root) {
		if err := s.growLocked(ctx, x, n); err != nil {
			if x.brokenErr() != nil || ctx.Err() != nil {
				s.use.release()
				return true, err
			}
			x.log.Info("MIT-SHM segment cannot grow; this capture uses GetImage", "bytes", n, "err", err)
		}
	}
	if s.buf == nil || n > len(s.buf) {
		s.use.release()
		return false, nil
	}
	seg, buf := s.seg, s.buf
	return true, x.do(ctx, "capture (MIT-SHM)", func() error {
		defer s.use.release()
		r, err := shm.GetImage(x.c, d, int16(sx), int16(sy), uint16(w), uint16(h), ^uint32(0), xproto.ImageFormatZPixmap, seg, 0).Reply()
		if err != nil {
			return xerr("capture (MIT-SHM)", err)
		}
		if r.Size < uint32(n) {
			return api.Errorf(api.KindEnv, "capture: the display's depth %d is not a 32-bit pixel format", r.Depth)
		}
		bgrxToRGBA(dst, buf[:n])
		return nil
	})
}

// growLocked replaces the segment by one of size bytes; on failure the old
// one stays.
func (s *shmSeg) growLocked(ctx context.Context, x *xconn, size int) error {
	n, err := newShmSeg(ctx, x, size)
	if err != nil {
		return err
	}
	old := s.seg
	_ = x.do(ctx, "detach MIT-SHM segment", func() error { return shm.DetachChecked(x.c, old).Check() })
	_ = unix.SysvShmDetach(s.buf)
	s.seg, s.buf = n.seg, n.buf
	return nil
}

// close detaches the segment; it waits for a capture in flight, which ends
// at the latest when the connection is dropped.
func (s *shmSeg) close(x *xconn) {
	_ = s.use.acquire(context.Background())
	defer s.use.release()
	if s.buf == nil {
		return
	}
	if x.alive() {
		_ = x.do(context.Background(), "detach MIT-SHM segment", func() error { return shm.DetachChecked(x.c, s.seg).Check() })
	}
	_ = unix.SysvShmDetach(s.buf)
	s.buf = nil
}
