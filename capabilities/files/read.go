package files

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
)

// MaxUnsizedReadBytes bounds the read of a file that does not know its
// size (see Open): such a file is read whole into memory at once, so a
// bigger one is refused rather than held, or cut short unnoticed.
const MaxUnsizedReadBytes = 16 << 20

// unsizedChunkBytes is the size of one read of a file that does not know
// its size; between two, the read looks whether its request has ended.
const unsizedChunkBytes = 64 << 10

// Content is a file opened for ranged reads, and its size.
type Content struct {
	io.ReaderAt
	Size  int64
	close func() error
}

// Close releases the file.
func (c *Content) Close() error { return c.close() }

// Open opens a regular file for ranged reads. Directories are refused: list
// them instead. A file that does not know its size (procfs files report 0,
// sysfs ones 4096 whatever they hold) is read to its end at once, up to
// MaxUnsizedReadBytes; its size is then what was read and ranges apply to
// that snapshot, so the size, every range and the sha256 of a whole-file
// read agree with each other. Such a read never waits for data (a file
// that would block answers what it had ready) and ends, its file closed,
// when ctx does (the client left).
func Open(ctx context.Context, path string) (*Content, error) {
	return open(ctx, path, MaxUnsizedReadBytes)
}

func open(ctx context.Context, path string, maxUnsized int64) (*Content, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer, possibly forever; it changes nothing for a regular file.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fsError("read", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fsError("read", p, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, api.Errorf(api.KindInvalidArgument, "read %s: is a directory; use list", p)
	}
	if !fi.Mode().IsRegular() {
		// A FIFO, socket or device has no size to range over, and a read
		// of it may never end.
		f.Close()
		return nil, api.Errorf(api.KindInvalidArgument, "read %s: not a regular file (%s)", p, typeName(fi.Mode()))
	}
	if fi.Size() > 0 && !sizeUnknown(f) {
		return &Content{ReaderAt: f, Size: fi.Size(), close: f.Close}, nil
	}
	defer f.Close()
	b, err := readUnsized(ctx, f, maxUnsized)
	if err != nil {
		if ctx.Err() != nil {
			return nil, api.Errorf(api.KindCancelled, "read %s: the request ended before the file was read", p).WithCause(err)
		}
		return nil, fsError("read", p, err)
	}
	if int64(len(b)) > maxUnsized {
		return nil, api.Errorf(api.KindLimitExceeded,
			"read %s: the file does not know its size and holds more than %d bytes (files.MaxUnsizedReadBytes); nothing was sent", p, maxUnsized).
			WithHint("read it with exec (cat, head, tail) instead").WithRetryable(false)
	}
	return &Content{ReaderAt: bytes.NewReader(b), Size: int64(len(b)), close: func() error { return nil }}, nil
}

// readUnsized reads f to its end, or to one byte past max, or until ctx
// ends. A file that would block (O_NONBLOCK makes /proc/kmsg answer EAGAIN
// when nothing is queued) ends where it has nothing more to give.
//
// Each read is one read(2) on the descriptor, never a wait in the Go
// runtime's poller: os.File registers a file that supports poll (as
// /proc/kmsg does) there, and its Read would then park on EAGAIN until data
// comes, for ever, its descriptor held open after the client left.
func readUnsized(ctx context.Context, f *os.File, max int64) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	chunk := make([]byte, unsizedChunkBytes)
	for int64(buf.Len()) <= max {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		want := chunk[:min(int64(len(chunk)), max+1-int64(buf.Len()))]
		var (
			n    int
			rerr error
		)
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), want)
			return true // done: never wait for readiness
		}); err != nil {
			return nil, err
		}
		switch {
		case errors.Is(rerr, syscall.EINTR):
			continue
		case errors.Is(rerr, syscall.EAGAIN):
			return buf.Bytes(), nil
		case rerr != nil:
			return nil, rerr
		case n <= 0:
			return buf.Bytes(), nil // end of file
		}
		buf.Write(want[:n])
	}
	return buf.Bytes(), nil
}

// Window is a part of a file: Length < 0 means to the end.
type Window struct {
	Offset, Length int64
}

func errRange(path string, start, size int64) *api.Error {
	return api.Errorf(api.KindInvalidArgument, "read %s: offset %d is at or past the end of the file (%d bytes)", path, start, size).
		WithCause(api.ErrRangeNotSatisfiable)
}

// Resolve clips a window to a file of size bytes. A window starting at or
// past the end answers invalid_argument with status 416, except on an empty
// file where reading "everything" is the empty answer.
func (w Window) Resolve(path string, size int64) (off, n int64, err error) {
	if w.Offset >= size && !(size == 0 && w.Offset == 0) {
		return 0, 0, errRange(path, w.Offset, size)
	}
	n = size - w.Offset
	if w.Length >= 0 && w.Length < n {
		n = w.Length
	}
	return w.Offset, n, nil
}

// ParseRange parses an HTTP Range header against a file of size bytes into
// a window. One range only ("bytes=A-B", "bytes=A-", "bytes=-N"): several
// ranges would need a multipart answer no client of ours reads. ok is false
// when the header is empty.
func ParseRange(path, header string, size int64) (w Window, ok bool, err error) {
	if header == "" {
		return Window{Length: -1}, false, nil
	}
	spec, found := strings.CutPrefix(header, "bytes=")
	if !found {
		return w, false, api.Errorf(api.KindInvalidArgument, "Range %q: only bytes=START-END is understood", header)
	}
	spec = strings.TrimSpace(spec)
	if strings.Contains(spec, ",") {
		return w, false, api.Errorf(api.KindInvalidArgument, "Range %q: one range per request", header)
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return w, false, api.Errorf(api.KindInvalidArgument, "Range %q: missing \"-\"", header)
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	num := func(s string) (int64, bool) {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		v, err := strconv.ParseInt(s, 10, 64)
		return v, err == nil
	}
	if a == "" {
		// Suffix range: the last N bytes.
		n, okN := num(b)
		if !okN {
			return w, false, api.Errorf(api.KindInvalidArgument, "Range %q: bad suffix length", header)
		}
		if n == 0 {
			return w, false, errRange(path, size, size)
		}
		if n > size {
			n = size
		}
		return Window{Offset: size - n, Length: n}, true, nil
	}
	start, okA := num(a)
	if !okA {
		return w, false, api.Errorf(api.KindInvalidArgument, "Range %q: bad start", header)
	}
	if b == "" {
		return Window{Offset: start, Length: -1}, true, nil
	}
	end, okB := num(b)
	if !okB || end < start {
		return w, false, api.Errorf(api.KindInvalidArgument, "Range %q: bad end", header)
	}
	if end == 1<<63-1 {
		return Window{Offset: start, Length: -1}, true, nil
	}
	return Window{Offset: start, Length: end - start + 1}, true, nil
}

// typeName names a non-regular file type for an error message.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "type " + m.Type().String()
}
