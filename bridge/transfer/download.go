package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
)

// Limits of a download.
const (
	// PartialSuffix ends the name of a download in progress, next to its
	// destination: ".<name>.<size>-<mtime ns>.cua-partial". Naming the
	// remote size and time means a resume never continues an older
	// version of the file.
	PartialSuffix = ".cua-partial"
	// tempInfix marks the temporary folder a folder download is assembled
	// in: ".<name>.cua-part-<random>".
	tempInfix = ".cua-part-"
	// maxLinkHops bounds how many symlinks a downloaded path may go through
	// before it names a file or folder.
	maxLinkHops = 8
	// listDepth is how deep a folder download lists (the daemon's maximum):
	// a folder at that depth has unlisted contents and is refused.
	listDepth = 32
	// maxUniqueTries bounds the "name (N).ext" search.
	maxUniqueTries = 10000
	// maxNameBytes is the longest file name most file systems take.
	maxNameBytes = 255
	// modeMask takes group and world write from the Space's modes: the
	// Space may be someone else's, and a umask of 022 is what a local copy
	// would get.
	modeMask fs.FileMode = 0o022
	// partialMode keeps a download private until it is complete.
	partialMode fs.FileMode = 0o600
)

// OnExists says what a download does when its destination exists.
type OnExists int

const (
	// Refuse fails with an ExistsError (cp without --force).
	Refuse OnExists = iota
	// Replace replaces a file (cp --force). A folder is never replaced.
	Replace
	// Rename lands at the first free "name (N).ext" (the download tool,
	// which never overwrites).
	Rename
)

// DownloadOptions are the policies in which the CLI and the tools differ.
type DownloadOptions struct {
	OnExists OnExists
	// KeepPartial keeps a file's partial download after a cancel or a
	// failure of the connection, so that the same download resumes from
	// it. A partial that failed its sha256 check is never kept; a folder
	// download keeps nothing.
	KeepPartial bool
	// Parents makes the destination's missing parent folders.
	Parents bool
}

// Download copies the file or folder src of the Space (absolute; a symlink
// is followed to what it names) to dest on this machine (an existing
// folder, or a path ending in "/", receives src under its own name).
func (s *Session) Download(ctx context.Context, src, dest string, o DownloadOptions) (*Result, error) {
	if !path.IsAbs(src) {
		return nil, api.Errorf(api.KindInvalidArgument, "path %q must be an absolute path in the Space", src)
	}
	src = path.Clean(src)
	name := path.Base(src)
	if name == "/" {
		return nil, api.Errorf(api.KindInvalidArgument, "download of / is not supported: name a folder")
	}
	real, info, err := s.statFollow(ctx, src)
	if err != nil {
		return nil, err
	}
	local, err := s.Host.Abs(dest)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(dest, "/") {
		local = filepath.Join(local, name)
	} else if fi, err := s.Host.Stat(local); err == nil && fi.IsDir() {
		local = filepath.Join(local, name)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	parent, err := s.Host.OpenDir(filepath.Dir(local), o.Parents)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	base := filepath.Base(local)
	if o.OnExists != Rename {
		// Refused before a byte moves; the final step checks again, in one
		// step with the move.
		if ok, err := parent.Exists(base); err != nil {
			return nil, err
		} else if ok && (o.OnExists == Refuse || info.Type == api.TypeDir) {
			return nil, errExists(local, info.Type == api.TypeDir)
		}
	}
	res := &Result{Source: src, Verified: true}
	var final string
	switch info.Type {
	case api.TypeFile:
		res.Kind, res.Files, res.Bytes = KindFile, 1, info.Size
		t := s.track(PhaseDownload, name, info.Size)
		final, res.SHA256, res.Verified, err = s.downloadFile(ctx, real, info, parent, base, o, t)
	case api.TypeDir:
		res.Kind = KindFolder
		final, err = s.downloadFolder(ctx, real, info, parent, base, o, res)
	default:
		return nil, api.Errorf(api.KindInvalidArgument, "%s is a %s in the Space, not a file or folder", src, info.Type)
	}
	if err != nil {
		return nil, err
	}
	// The new name is only durable once the folder holding it is synced.
	if err := parent.Sync(); err != nil {
		return nil, err
	}
	res.Dest = filepath.Join(filepath.Dir(local), final)
	return res, nil
}

// statFollow describes p in the Space, following symlinks to what they
// name; it answers the path it arrived at.
func (s *Session) statFollow(ctx context.Context, p string) (string, *api.FileInfo, error) {
	for hop := 0; ; hop++ {
		fi, err := s.Client.Stat(ctx, p)
		if err != nil || fi.Type != api.TypeSymlink {
			return p, fi, err
		}
		if hop == maxLinkHops {
			return "", nil, api.Errorf(api.KindInvalidArgument, "%s: more than %d symlinks in a row", p, maxLinkHops)
		}
		t := fi.Target
		if !path.IsAbs(t) {
			t = path.Join(path.Dir(p), t)
		}
		p = path.Clean(t)
	}
}

// downloadFile fetches one file into dir/name through a partial file and
// answers the name it landed at, its sha256 and whether the Space's sha256
// confirmed it.
func (s *Session) downloadFile(ctx context.Context, src string, info *api.FileInfo, dir *hostfs.Dir, name string, o DownloadOptions, t *tracker) (string, string, bool, error) {
	part := partialName(name, info)
	f, err := openPartial(dir, part)
	if err != nil {
		return "", "", false, err
	}
	keep := false
	defer func() {
		f.Close() // also drops the lock
		if !keep {
			_ = dir.Remove(part)
		}
	}()
	h := sha256.New()
	// Resume: what an earlier run left is hashed again, then continued.
	have, err := io.CopyBuffer(h, io.LimitReader(f, info.Size), make([]byte, copyBufBytes))
	if err != nil {
		return "", "", false, api.Errorf(api.KindIO, "read %s: %w", f.Name(), err)
	}
	if err := f.Truncate(have); err != nil {
		return "", "", false, api.Errorf(api.KindIO, "truncate %s: %w", f.Name(), err)
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return "", "", false, api.Errorf(api.KindIO, "seek %s: %w", f.Name(), err)
	}
	trailer, err := s.fetch(ctx, src, info.Size, f, h, have, t.set)
	if err != nil {
		// Worth resuming: a cancel or a connection that broke. A local
		// failure or a file that changed in the Space is not.
		broken := api.AsError(err).Retryable && !isLocal(err) && api.KindOf(err) != api.KindTransferFailed
		keep = o.KeepPartial && (ctx.Err() != nil || broken)
		if ctx.Err() != nil {
			return "", "", false, cancelled(ctx, "download of "+src, t.done, info.Size, keep)
		}
		return "", "", false, err
	}
	sum, verified, err := s.verify(ctx, src, h, trailer)
	if err != nil {
		return "", "", false, err
	}
	if err := finishFile(f, info.Mode); err != nil {
		return "", "", false, err
	}
	final, err := place(dir, part, name, o.OnExists, false)
	if err != nil {
		return "", "", false, err
	}
	return final, sum, verified, nil
}

// partialName names the partial file of a download of info to name; a
// name too long for the file system is shortened, the remote size and time
// kept.
func partialName(name string, info *api.FileInfo) string {
	return shortName(name, fmt.Sprintf(".%d-%d%s", info.Size, info.Modified.UnixNano(), PartialSuffix), 0)
}

// openPartial opens (or makes) a partial file and locks it. Only a regular
// file with one link, owned by us, is resumed: anything else at that name
// (a symlink a Space's folder planted, a hard link to another file, a FIFO)
// is not ours to write into, and is replaced by a fresh file.
func openPartial(dir *hostfs.Dir, part string) (*os.File, error) {
	f, err := dir.OpenFile(part, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, partialMode)
	if err == nil && !ownedRegular(f) {
		f.Close()
		err = errors.New("not our partial file")
	}
	if err != nil {
		if err := dir.Remove(part); err != nil {
			return nil, err
		}
		if f, err = dir.Create(part, partialMode); err != nil {
			return nil, err
		}
	}
	// Two downloads of one file to one place would write the same partial
	// at once; the second waits for nothing and says so.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, api.Errorf(api.KindTransferFailed, "another download into %s is running (it holds %s); let it finish", dir.Path(), part)
		}
		return nil, api.Errorf(api.KindIO, "lock %s: %w", f.Name(), err)
	}
	return f, nil
}

func ownedRegular(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Nlink) == 1 && int(st.Uid) == os.Geteuid()
}

// fetch reads src from offset have to size into w (and h), resuming with a
// ranged read after a retryable failure. It answers the daemon's sha256 of
// the whole file when it came in one answer from the start.
func (s *Session) fetch(ctx context.Context, src string, size int64, f *os.File, h hash.Hash, have int64, report func(int64)) (string, error) {
	out := io.MultiWriter(localWriter{f}, h)
	buf := make([]byte, copyBufBytes)
	offset, attempt, whole := have, 0, have == 0
	trailer := ""
	report(offset)
	for whole || offset < size {
		body, resp, err := s.open(ctx, src, offset, size-offset, whole)
		fromStart := whole
		whole = false
		if err == nil {
			base := offset
			// One byte more than announced tells a file that grew. A cancel
			// stops the copy at the next read, not only once the transport
			// notices: on loopback the rest may be buffered by then.
			cr := &countingReader{r: ctxReader{ctx, io.LimitReader(body, size-offset+1)}, report: func(k int64) { report(base + k) }}
			var n int64
			n, err = io.CopyBuffer(out, cr, buf)
			body.Close()
			offset += n
			var ae *api.Error
			switch {
			case err != nil && !errors.As(err, &ae):
				// A failed read of the body: the connection, retryable.
				err = api.Errorf(api.KindEnv, "read %s: %w", src, err)
			case offset > size:
				return "", api.Errorf(api.KindTransferFailed, "download %s: the file grew past %d bytes while it was read; nothing was kept", src, size)
			case err == nil && n == 0 && offset < size:
				return "", api.Errorf(api.KindTransferFailed, "download %s: the file shrank below %d bytes while it was read; nothing was kept", src, size)
			case err == nil && fromStart && offset == size:
				// Read to EOF from the start: the trailer is there now.
				trailer = resp.Trailer.Get(api.HeaderSHA256)
			}
		}
		if err != nil {
			if ctx.Err() != nil || isLocal(err) || !retry(ctx, err, &attempt) {
				return "", err
			}
			continue
		}
		attempt = 0
	}
	return trailer, nil
}

// open reads src from offset: from the start, one whole-file answer (resp
// set), which carries the daemon's sha256 of what it sent as a trailer; a
// resume is a ranged read.
func (s *Session) open(ctx context.Context, src string, offset, n int64, whole bool) (io.ReadCloser, *http.Response, error) {
	if !whole {
		body, _, err := s.Client.Read(ctx, src, offset, n)
		return body, nil, err
	}
	resp, err := s.Client.Do(ctx, http.MethodGet, api.PathFileContent, api.FileReadQuery{Path: src}.Values(), nil, "")
	if err != nil {
		return nil, nil, err
	}
	return resp.Body, resp, nil
}

// verify compares what was received with the Space's sha256: the trailer,
// else (a resumed download came in ranges) sha256sum in the Space. verified
// is false when the Space can tell neither; the size was checked.
func (s *Session) verify(ctx context.Context, src string, h hash.Hash, trailer string) (string, bool, error) {
	sum := hex.EncodeToString(h.Sum(nil))
	remote := trailer
	if len(remote) != sha256.Size*2 {
		var err error
		if remote, err = s.remoteSHA256(ctx, src); err != nil {
			return "", false, err
		}
	}
	if remote == "" {
		return sum, false, nil
	}
	if !strings.EqualFold(remote, sum) {
		return "", false, api.Errorf(api.KindTransferFailed, "download %s: sha256 mismatch (got %s, the Space has %s); nothing was written", src, sum, remote)
	}
	return sum, true, nil
}

// finishFile gives a verified file the Space's mode (an executable stays
// one, without group or world write) and flushes it to disk.
func finishFile(f *os.File, mode string) error {
	if m, ok := localMode(mode); ok {
		if err := f.Chmod(m); err != nil {
			return api.Errorf(api.KindIO, "chmod %s: %w", f.Name(), err)
		}
	}
	// fsync before the move: a crash must leave the old name or the whole
	// new file, never a short one.
	if err := f.Sync(); err != nil {
		return api.Errorf(api.KindIO, "fsync %s: %w", f.Name(), err)
	}
	return nil
}

// localMode is the local permission of an entry whose mode in the Space is
// m ("0755"); ok is false when m does not parse.
func localMode(m string) (fs.FileMode, bool) {
	n, err := strconv.ParseUint(m, 8, 32)
	if err != nil {
		return 0, false
	}
	return fs.FileMode(n).Perm() &^ modeMask, true
}

// place moves a finished download (a file, or a folder's temporary tree)
// from tmp to name in dir, by the policy, and answers the name it took. No
// step checks and then moves: the move itself fails if the name is taken
// (a hard link, or a rename that does not replace), so a file or empty
// folder that appeared meanwhile is never overwritten.
func place(dir *hostfs.Dir, tmp, name string, policy OnExists, folder bool) (string, error) {
	if policy == Replace && !folder {
		return name, dir.Rename(tmp, name)
	}
	tries := 1
	if policy == Rename {
		tries = maxUniqueTries
	}
	for i := range tries {
		cand := uniqueName(name, i)
		err := moveNoReplace(dir, tmp, cand, folder)
		if err == nil {
			return cand, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	if policy == Rename {
		return "", api.Errorf(api.KindIO, "no free name for %s after %d tries", filepath.Join(dir.Path(), name), maxUniqueTries)
	}
	return "", errExists(filepath.Join(dir.Path(), name), folder)
}

// moveNoReplace moves tmp to name unless name exists. A file is hard-linked
// (then its temporary name removed); a folder, or a file on a file system
// without hard links, is renamed without replacing.
func moveNoReplace(dir *hostfs.Dir, tmp, name string, folder bool) error {
	if !folder {
		err := dir.Link(tmp, name)
		if err == nil {
			_ = dir.Remove(tmp)
			return nil
		}
		if errors.Is(err, fs.ErrExist) || !noHardLinks(err) {
			return err
		}
	}
	return dir.RenameNoReplace(tmp, name)
}

// noHardLinks tells a file system that cannot link from a real failure.
func noHardLinks(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EMLINK)
}

// uniqueName returns the i-th candidate for name: name itself, then
// "stem (i).ext".
func uniqueName(name string, i int) string {
	if i == 0 {
		return name
	}
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" { // ".bashrc": the dot is the name, not an extension
		stem, ext = name, ""
	}
	return fmt.Sprintf("%s (%d)%s", stem, i, ext)
}

// localWriter tags a failed local write as kind io, so it is told apart
// from a broken connection (which is retried).
type localWriter struct{ f *os.File }

func (w localWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil {
		return n, api.Errorf(api.KindIO, "write %s: %w", w.f.Name(), err)
	}
	return n, nil
}
