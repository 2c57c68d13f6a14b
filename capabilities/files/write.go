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
	"path/filepath"
	"sync"
	"syscall"

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
	// Mode of the new file; nil keeps the old file's mode, or DefaultFileMode.
	Mode *fs.FileMode
	// Counter, when set, is called with the count of each block read.
	Counter func(n int)
}

// WriteAtomic replaces path with the bytes of r: the old file or the new
// one, never a mix, and nothing at all when anything fails (including a
// full disk). The temp file lives in the destination directory so the final
// rename stays on one file system and is atomic.
func WriteAtomic(path string, r io.Reader, opt WriteOptions) (api.WriteResult, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return api.WriteResult{}, err
	}
	t, err := prepareTarget("write", p, opt.Mode)
	if err != nil {
		return api.WriteResult{}, err
	}
	tmp, f, err := createTemp(t.dir, "."+shortName(filepath.Base(p), ".cua-write-"+randomHex(8)))
	if err != nil {
		return api.WriteResult{}, fsError("write", p, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	n, rerr, werr := copyHashed(f, r, h, opt.Counter)
	switch {
	case werr != nil:
		return api.WriteResult{}, writeError("write", p, werr)
	case rerr != nil:
		return api.WriteResult{}, api.Errorf(api.KindTransferFailed,
			"write %s: the body ended early after %d bytes (%v); nothing was changed", p, n, rerr)
	}
	if err := t.install(f, tmp, true); err != nil {
		return api.WriteResult{}, writeError("write", p, err)
	}
	ok = true
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

// target is a checked destination: where the new file goes and the mode
// and owner it gets.
type target struct {
	path, dir string
	mode      fs.FileMode
	// uid/gid of the file being replaced; -1 when none (keep ours).
	uid, gid int
}

// prepareTarget checks that path can take a new file and decides its mode:
// the given one, else the old file's, else DefaultFileMode.
func prepareTarget(op, path string, mode *fs.FileMode) (target, error) {
	t := target{path: path, dir: filepath.Dir(path), mode: DefaultFileMode, uid: -1, gid: -1}
	if path == "/" {
		return t, api.Errorf(api.KindInvalidArgument, "%s /: the root directory cannot be a file", op)
	}
	dfi, err := os.Stat(t.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return t, api.Errorf(api.KindNotFound, "%s %s: the directory %s does not exist", op, path, t.dir).
			WithHint("make it first (mkdir with parents=true)")
	}
	if err != nil {
		return t, fsError(op, path, err)
	}
	if !dfi.IsDir() {
		return t, api.Errorf(api.KindInvalidArgument, "%s %s: %s is not a directory", op, path, t.dir)
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return t, api.Errorf(api.KindInvalidArgument, "%s %s: is a directory", op, path)
		}
		t.mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			t.uid, t.gid = int(st.Uid), int(st.Gid)
		}
	}
	if mode != nil {
		t.mode = *mode
	}
	return t, nil
}

// install gives the temp file its mode and owner, makes it durable and
// renames it over the destination. fsync before rename: a crash must leave
// the old file or the new one, never a mix; fsync of the directory after:
// the rename itself must survive a crash too.
func (t target) install(f *os.File, tmp string, overwrite bool) error {
	if err := f.Chmod(t.mode); err != nil {
		return err
	}
	if t.uid >= 0 && os.Geteuid() == 0 {
		// Replacing a user's file as root must not hand it to root.
		_ = f.Chown(t.uid, t.gid)
		if t.mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			_ = f.Chmod(t.mode) // chown clears setuid/setgid
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var err error
	if overwrite {
		err = os.Rename(tmp, t.path)
	} else {
		err = renameNoReplace(tmp, t.path)
	}
	if err != nil {
		return err
	}
	return syncDir(t.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		// EINVAL: a file system that cannot sync directories; nothing to do.
		return err
	}
	return nil
}

// createTemp creates a new file readable only by us until install sets
// its mode.
func createTemp(dir, name string) (string, *os.File, error) {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	return p, f, err
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
