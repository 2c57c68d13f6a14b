package files

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// CopyBufferBytes is the buffer of every bulk copy: large enough that the
// per-call costs of read, write and the hash are noise next to the bytes.
const CopyBufferBytes = 1 << 20

// maxNameBytes is the longest file name most file systems take.
const maxNameBytes = 255

var bufPool = sync.Pool{New: func() any { b := make([]byte, CopyBufferBytes); return &b }}

// WriteOptions adjust WriteAtomic.
type WriteOptions struct {
	// Mode of the new file, applied exactly (setuid and setgid included);
	// nil keeps the old file's permission bits, or DefaultFileMode.
	Mode *fs.FileMode
	// Counter, when set, is called with the count of each block read.
	Counter func(n int)
	// Journal, when set, records a named temp file while it exists, so
	// that the next start removes it if the daemon dies first.
	Journal *Journal
	// namedTemp forces the named temp file that file systems without
	// O_TMPFILE get, so that tests cover that path too.
	namedTemp bool
}

// WriteAtomic replaces path with the bytes of r: the old file or the new
// one, never a mix, and nothing at all when anything fails (including a
// full disk). A final symlink is followed, as a shell's > does, when the
// trust rule of resolve.go allows it: the target is then replaced in its
// own directory, and the link stays. The new content is written to an
// unnamed file in the destination directory and linked into place when
// complete, so the rename stays on one file system and is atomic, and a
// crash leaves nothing behind.
func WriteAtomic(path string, r io.Reader, opt WriteOptions) (api.WriteResult, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return api.WriteResult{}, err
	}
	d, name, meta, err := openTarget("write", p, opt.Mode)
	if err != nil {
		return api.WriteResult{}, err
	}
	defer d.Close()
	t, err := newTempFile(d, name, !opt.namedTemp, opt.Journal)
	if err != nil {
		return api.WriteResult{}, writeError("write", p, err)
	}
	defer t.discard()
	h := sha256.New()
	n, rerr, werr := copyHashed(t.f, r, h, opt.Counter)
	switch {
	case werr != nil:
		return api.WriteResult{}, writeError("write", p, werr)
	case rerr != nil:
		return api.WriteResult{}, api.Errorf(api.KindTransferFailed,
			"write %s: the body ended early after %d bytes (%v); nothing was changed", p, n, rerr)
	}
	// A new file is linked straight to its name, with no temp name on the
	// way; if one appeared meanwhile, it is replaced as any old file.
	err = t.commit(meta, name, meta.existed)
	if errors.Is(err, os.ErrExist) {
		err = t.commit(meta, name, true)
	}
	if err != nil {
		return api.WriteResult{}, writeError("write", p, err)
	}
	return api.WriteResult{Path: p, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// writeError names a full disk in the words a person needs: it is the
// common failure of a big write, and nothing was left behind.
func writeError(op, path string, err error) error {
	if isDiskFull(err) {
		return api.Errorf(api.KindIO, "disk full while writing %s; nothing was changed", path).
			WithHint("free space on the Space's disk (or its quota), then retry").WithCause(err)
	}
	return fsError(op, path, err)
}

// copyHashed copies src to dst through the hash, returning the bytes
// written and, separately, a read error (the sender's fault) or a write
// error (ours: disk full, I/O). Only bytes that reached dst are hashed, so
// after a failure the hash still matches the file's prefix.
func copyHashed(dst io.Writer, src io.Reader, h hash.Hash, counter func(int)) (n int64, rerr, werr error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		// Fill the whole buffer before writing: fewer, larger writes and
		// hash calls, whatever size the sender's packets come in.
		nr, err := fill(src, buf)
		if nr > 0 {
			if counter != nil {
				counter(nr)
			}
			nw, ew := dst.Write(buf[:nr])
			h.Write(buf[:nw])
			n += int64(nw)
			if ew != nil {
				return n, nil, ew
			}
		}
		if errors.Is(err, io.EOF) {
			return n, nil, nil
		}
		if err != nil {
			return n, err, nil
		}
	}
}

// fill reads into buf until it is full or src fails; io.EOF (only) is the
// normal end, so a body cut short (io.ErrUnexpectedEOF) stays an error.
func fill(src io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// openTarget resolves where a write or an upload of p lands (following a
// final symlink under the trust rule) and decides the new file's mode and
// owner. The caller closes the directory.
func openTarget(op, p string, mode *fs.FileMode) (*dir, string, fileMeta, error) {
	if p == "/" {
		return nil, "", fileMeta{}, api.Errorf(api.KindInvalidArgument, "%s /: the root directory cannot be a file", op)
	}
	w := newWalker(op)
	d, name, err := w.parent(p)
	if err != nil {
		return nil, "", fileMeta{}, err
	}
	d, name, err = w.final(d, name)
	if err != nil {
		return nil, "", fileMeta{}, fsError(op, p, err)
	}
	meta, err := metaFor(op, p, d, name, mode)
	if err != nil {
		d.Close()
		return nil, "", fileMeta{}, err
	}
	return d, name, meta, nil
}

// fileMeta is what a new file gets: its mode and, when it replaces a file
// as root, the old file's owner.
type fileMeta struct {
	mode     fs.FileMode
	uid, gid int  // -1: keep ours
	existed  bool // a file was there to replace
}

// metaFor decides the mode and owner of the file about to be put at name
// in d: the given mode, else the old file's permission bits, else
// DefaultFileMode. Setuid and setgid are never carried over from the old
// file: they would turn the caller's bytes into a program that runs as the
// old file's owner. Only a mode the caller names sets them. Replacing a
// user's file as root keeps its owner (the new content is still theirs);
// only regular files are replaced: a device, FIFO or socket at the path is
// refused rather than swapped for a file.
func metaFor(op, p string, d *dir, name string, mode *fs.FileMode) (fileMeta, error) {
	m := fileMeta{mode: DefaultFileMode, uid: -1, gid: -1}
	st, err := d.lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return m, fsError(op, p, err)
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
		m.existed = true
		m.mode = fs.FileMode(st.Mode) & fs.ModePerm
		if os.Geteuid() == 0 {
			m.uid, m.gid = int(st.Uid), int(st.Gid)
		}
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return m, api.Errorf(api.KindInvalidArgument, "%s %s: is a directory", op, p)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		// The walk followed every final link: this one was swapped in since.
		return m, api.Errorf(api.KindPreconditionFailed, "%s %s: the path changed into a symlink while it was resolved; retry", op, p).
			WithRetryable(true)
	default:
		return m, api.Errorf(api.KindInvalidArgument, "%s %s: %s, not a regular file; only regular files are replaced", op, p, kindName(uint32(st.Mode)))
	}
	if mode != nil {
		m.mode = *mode
	}
	return m, nil
}

// apply gives f its owner, then its mode: chown clears setuid and setgid,
// so a mode that asks for them must come after.
func (m fileMeta) apply(f *os.File) error {
	if m.uid >= 0 {
		// Best effort: a uid unmapped in our user namespace stays ours.
		_ = f.Chown(m.uid, m.gid)
	}
	return f.Chmod(m.mode)
}

// shortName fits "name"+suffix into one file-name, cutting name if needed.
func shortName(name, suffix string) string {
	if max := maxNameBytes - 1 - len(suffix); len(name) > max {
		name = name[:max]
	}
	return name + suffix
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
