package desktop

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// shmSeg is one System V shared memory segment attached by both the daemon
// and the X server: a capture lands there without travelling through the
// socket. It is the size of the screen at connect; a bigger capture (a
// grown screen, a big window) is read through it in several batches.
type shmSeg struct {
	// use is held by one capture at a time, from before its request until
	// the pixels are copied out; a capture abandoned by its caller keeps it
	// until the server answers or the connection is dropped, so the server
	// never writes into a buffer another capture reads.
	use semaphore
	seg shm.Seg
	buf []byte // nil once closed; guarded by use
	n   int    // the segment's size, fixed
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
	s := &shmSeg{use: newSemaphore(), buf: buf, n: size}
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

// size is how many bytes one batch of reads may fill.
func (s *shmSeg) size() int { return s.n }

// read reads a batch of strips of src, which together fit the segment,
// into px: the requests go out together and their replies are awaited
// together, one round trip for the batch. The segment is held from before
// the first request until the last strip is copied out, so the server
// never writes into it while another capture reads it.
func (s *shmSeg) read(ctx context.Context, x *xconn, src *source, batch []strip, px pixels) error {
	if s.use.acquire(ctx) != nil {
		return x.ctxErr(ctx, "wait for another capture")
	}
	if s.buf == nil {
		s.use.release()
		return api.Errorf(api.KindEnv, "X display %s: capture after the connection was closed", x.display)
	}
	seg, buf := s.seg, s.buf
	// Whoever claims the segment first releases it: the read, or this
	// call when do returned without running it (its context ended, or
	// the connection broke, before it started). Without the claim a
	// read that never ran kept the segment, and close waited for ever.
	var claimed atomic.Bool
	err := x.do(ctx, "capture (MIT-SHM)", func() error {
		if !claimed.CompareAndSwap(false, true) {
			return x.ctxErr(ctx, "capture (MIT-SHM)")
		}
		defer s.use.release()
		cookies := make([]shm.GetImageCookie, len(batch))
		off := 0
		for i, r := range batch {
			p := r.Min.Add(src.origin)
			cookies[i] = shm.GetImage(x.c, src.drawable, int16(p.X), int16(p.Y), uint16(r.Dx()), uint16(r.Dy()),
				^uint32(0), xproto.ImageFormatZPixmap, seg, uint32(off))
			off += r.Dx() * r.Dy() * 4
		}
		off = 0
		for i, r := range batch {
			rep, err := cookies[i].Reply()
			if err != nil {
				return xerr("capture (MIT-SHM)", err)
			}
			n := r.Dx() * r.Dy() * 4
			if rep.Size < uint32(n) {
				return errNot32Bit(rep.Depth)
			}
			put(px, r, buf[off:off+n])
			off += n
		}
		return nil
	})
	if claimed.CompareAndSwap(false, true) {
		s.use.release()
	}
	return err
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
