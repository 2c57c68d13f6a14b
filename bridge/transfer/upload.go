package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
)

// UploadOptions are the policies in which the CLI and the tools differ.
type UploadOptions struct {
	// Overwrite replaces existing files in the Space. Without it an
	// existing destination is refused before anything is hashed or sent.
	Overwrite bool
	// KeepOnCancel keeps what reached the Space when the caller cancels, so
	// that the same upload resumes from there; otherwise the upload is
	// aborted in the Space and nothing of it stays. A failure other than a
	// cancel always keeps it (the Space drops it after an idle hour).
	KeepOnCancel bool
}

// upFile is one local file of an upload.
type upFile struct {
	rel    string // slash-separated path in the folder; "" for a single file
	remote string
	size   int64
	mode   fs.FileMode
	sum    string
	// open answers the file and what to call when done with it.
	open func() (*os.File, func(), error)
}

// Upload copies the local file or folder src to dest in the Space (an
// absolute path; an existing folder, or a path ending in "/", receives
// src under its own name). Every file is hashed first, then sent; each
// lands only once the Space has verified its sha256.
func (s *Session) Upload(ctx context.Context, src, dest string, o UploadOptions) (*Result, error) {
	if !path.IsAbs(dest) {
		return nil, api.Errorf(api.KindInvalidArgument, "dest %q must be an absolute path in the Space", dest)
	}
	local, err := s.Host.Abs(src)
	if err != nil {
		return nil, err
	}
	f, err := s.Host.Open(local)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, api.Errorf(api.KindIO, "stat %s: %w", local, err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		// A device or FIFO: /dev/zero would be hashed forever, a FIFO
		// blocks its first read, /dev/null would land as an empty file.
		return nil, api.Errorf(api.KindInvalidArgument, "%s is a %s, not a regular file or folder", local, typeName(fi.Mode()))
	}
	name := filepath.Base(local)
	remote, err := s.remoteDest(ctx, dest, name, o.Overwrite)
	if err != nil {
		return nil, err
	}
	res := &Result{Source: local, Dest: remote, Kind: KindFile, Verified: true}
	var files []upFile
	var dirs []string
	if fi.IsDir() {
		res.Kind = KindFolder
		root := s.Host.AsDir(f)
		if files, dirs, err = walkLocal(root, ""); err != nil {
			return nil, err
		}
		for i := range files {
			rel := files[i].rel
			files[i].remote = path.Join(remote, rel)
			files[i].open = func() (*os.File, func(), error) {
				f, err := openIn(root, rel)
				return f, func() { f.Close() }, err
			}
		}
	} else {
		files = []upFile{{remote: remote, size: fi.Size(), open: func() (*os.File, func(), error) { return f, func() {}, nil }}}
	}
	var total int64
	for _, u := range files {
		total += u.size
	}

	// Hash everything first: an unreadable file fails the upload before
	// a byte is sent, and the Space needs each sha256 up front.
	ht := s.track(PhaseHash, name, total)
	var hashed int64
	for i := range files {
		if err := files[i].hash(ctx, func(k int64) { ht.set(hashed + k) }); err != nil {
			if ctx.Err() != nil {
				return nil, cancelled(ctx, "sha256 of "+local, hashed, total, false)
			}
			return nil, err
		}
		hashed += files[i].size
	}
	total = hashed // what was hashed is what is sent, whatever the walk saw

	if res.Kind == KindFolder {
		for _, d := range append([]string{""}, dirs...) {
			if err := s.Client.Mkdir(ctx, api.MkdirRequest{Path: path.Join(remote, d), Parents: true}); err != nil {
				return nil, err
			}
		}
	}
	ut := s.track(PhaseUpload, name, total)
	var sent int64
	var manifest strings.Builder
	for i := range files {
		u := &files[i]
		off, err := s.send(ctx, u, o, func(k int64) { ut.set(sent + k) })
		if err != nil {
			if ctx.Err() != nil {
				return nil, cancelled(ctx, "upload of "+local, sent+off, total, o.KeepOnCancel)
			}
			return nil, err
		}
		sent += u.size
		fmt.Fprintf(&manifest, "%s  %s\n", u.sum, u.rel)
	}
	res.Files, res.Bytes = len(files), total
	if res.Kind == KindFolder {
		res.SHA256 = manifestSum(manifest.String())
	} else {
		res.SHA256 = files[0].sum
	}
	return res, nil
}

// remoteDest is where an upload lands: dest itself, or dest/name when dest
// names a folder (by a trailing slash or because it is one). Without
// overwrite an existing destination is refused now, before any work.
func (s *Session) remoteDest(ctx context.Context, dest, name string, overwrite bool) (string, error) {
	p := path.Clean(dest)
	if strings.HasSuffix(dest, "/") {
		p = path.Join(p, name)
	} else {
		fi, err := s.Client.Stat(ctx, p)
		switch {
		case api.KindOf(err) == api.KindNotFound:
			return p, nil
		case err != nil:
			return "", err
		case fi.Type == api.TypeDir:
			p = path.Join(p, name)
		case !overwrite:
			return "", errExists(p, false)
		default:
			return p, nil
		}
	}
	if overwrite {
		return p, nil
	}
	_, err := s.Client.Stat(ctx, p)
	switch {
	case err == nil:
		return "", errExists(p, false)
	case api.KindOf(err) != api.KindNotFound:
		return "", err
	}
	return p, nil
}

// walkLocal lists a folder's files and folders below rel, sorted, through
// open directories (a folder swapped for a link meanwhile is not entered).
// A symlink or special file is refused rather than skipped: the copy would
// silently differ from the folder.
func walkLocal(d *hostfs.Dir, rel string) ([]upFile, []string, error) {
	names, err := d.Names()
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	var files []upFile
	var dirs []string
	for _, n := range names {
		r := path.Join(rel, n)
		info, err := d.Lstat(n)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case info.Mode.IsDir():
			sub, err := d.Sub(n)
			if err != nil {
				return nil, nil, err
			}
			f, ds, err := walkLocal(sub, r)
			sub.Close()
			if err != nil {
				return nil, nil, err
			}
			dirs = append(dirs, r)
			dirs = append(dirs, ds...)
			files = append(files, f...)
		case info.Mode.IsRegular():
			files = append(files, upFile{rel: r, size: info.Size})
		default:
			return nil, nil, api.Errorf(api.KindInvalidArgument,
				"%s is a %s: a folder upload copies files and folders only; remove it or upload the folder's files one by one",
				filepath.Join(d.Path(), n), typeName(info.Mode))
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, dirs, nil
}

// openIn opens the file rel below root, following no symlink.
func openIn(root *hostfs.Dir, rel string) (*os.File, error) {
	dir, name := path.Split(rel)
	if dir == "" {
		return root.Open(name)
	}
	sub, err := root.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	return sub.Open(name)
}

// hash reads the file once, stopping when ctx ends, and records its size,
// mode and sha256.
func (u *upFile) hash(ctx context.Context, report func(int64)) error {
	f, release, err := u.open()
	if err != nil {
		return err
	}
	defer release()
	fi, err := f.Stat()
	if err != nil {
		return api.Errorf(api.KindIO, "stat %s: %w", f.Name(), err)
	}
	if !fi.Mode().IsRegular() {
		return api.Errorf(api.KindInvalidArgument, "%s is a %s now, not a regular file", f.Name(), typeName(fi.Mode()))
	}
	u.size, u.mode = fi.Size(), fi.Mode().Perm()
	h := sha256.New()
	r := &countingReader{r: ctxReader{ctx, io.NewSectionReader(f, 0, u.size)}, report: report}
	n, err := io.CopyBuffer(h, r, make([]byte, copyBufBytes))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return api.Errorf(api.KindIO, "read %s: %w", f.Name(), err)
	}
	if n != u.size {
		return api.Errorf(api.KindIO, "read %s: it shrank from %d to %d bytes while it was read", f.Name(), u.size, n)
	}
	u.sum = hex.EncodeToString(h.Sum(nil))
	return nil
}

// send uploads one hashed file in chunks, resuming from the Space's offset
// after a retryable failure, and commits it. It answers the offset reached.
func (s *Session) send(ctx context.Context, u *upFile, o UploadOptions, report func(int64)) (int64, error) {
	f, release, err := u.open()
	if err != nil {
		return 0, err
	}
	defer release()
	req := api.UploadRequest{Path: u.remote, Size: u.size, SHA256: u.sum, Mode: api.FileModeString(u.mode), Overwrite: o.Overwrite}
	var st *api.UploadState
	for attempt := 0; ; {
		// Announcing the same path, size and sha256 again finds the
		// upload an earlier run left: the Space answers its offset.
		if st, err = s.Client.BeginUpload(ctx, req); err == nil || !retry(ctx, err, &attempt) {
			break
		}
	}
	if err != nil {
		return 0, err
	}
	committed := false
	defer func() {
		if !committed && ctx.Err() != nil && !o.KeepOnCancel {
			// Cancelled: drop the partial data in the Space.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			_ = s.Client.AbortUpload(actx, st.ID)
			cancel()
		}
	}()
	chunk := DefaultChunkBytes
	if s.Caps != nil && s.Caps.Limits.UploadChunkBytes > 0 {
		chunk = int(s.Caps.Limits.UploadChunkBytes)
	}
	offset, attempt := st.Offset, 0
	report(offset)
	for offset < u.size {
		n := min(int64(chunk), u.size-offset)
		base := offset
		body := &countingReader{r: ctxReader{ctx, io.NewSectionReader(f, offset, n)}, report: func(k int64) { report(base + k) }}
		next, err := s.Client.PutChunk(ctx, st.ID, offset, body, n)
		if err != nil {
			if ctx.Err() != nil || !retry(ctx, err, &attempt) {
				return offset, prefixed(err, "upload %s to %s at offset %d", f.Name(), u.remote, offset)
			}
			// Resume from what the Space holds, which may be more than we
			// know if its answer was lost.
			if cur, serr := s.Client.UploadStatus(ctx, st.ID); serr == nil {
				offset = cur.Offset
			}
			continue
		}
		if next.Offset <= offset {
			return offset, api.Errorf(api.KindTransferFailed, "upload %s: the Space did not advance past offset %d", u.remote, offset)
		}
		attempt, offset = 0, next.Offset
		report(offset)
	}
	res, err := s.Client.CommitUpload(ctx, st.ID)
	if err != nil {
		return offset, err
	}
	committed = true
	if !strings.EqualFold(res.SHA256, u.sum) || res.Size != u.size {
		return offset, api.Errorf(api.KindTransferFailed, "upload %s: the Space verified sha256 %s (%d bytes), want %s (%d bytes); nothing was written",
			u.remote, res.SHA256, res.Size, u.sum, u.size)
	}
	return offset, nil
}

// prefixed returns err (as an *api.Error, kind and retry flag kept) with
// its message prefixed.
func prefixed(err error, format string, args ...any) error {
	e := *api.AsError(err)
	e.Message = fmt.Sprintf(format, args...) + ": " + e.Message
	return &e
}

func manifestSum(m string) string {
	s := sha256.Sum256([]byte(m))
	return hex.EncodeToString(s[:])
}

// typeName names a file type for a person.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "folder"
	}
	return "special file"
}
