package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

// Limits of cp.
const (
	// defaultChunkBytes is the upload chunk when the Space does not say
	// its own limit.
	defaultChunkBytes = 8 << 20
	// maxTransferRetries bounds how often one chunk (or one download
	// range) is retried after a retryable failure before cp gives up.
	maxTransferRetries = 5
	// retryBackoff is the pause before a retry.
	retryBackoff = 500 * time.Millisecond
	// partialSuffix names a download in progress next to its destination;
	// a later cp of the same remote file resumes it.
	partialSuffix = ".cua-partial"
	// maxHashOutput bounds what the remote sha256 command may print.
	maxHashOutput = 4 << 10
)

const cpUsage = "cp [--force] SRC DST   (one side SPACE:/path, the other a local path)"

// location is one side of a copy: a path in a Space, or a local path.
type location struct {
	space string // "" = local
	path  string
}

func (l location) String() string {
	if l.space == "" {
		return l.path
	}
	return l.space + ":" + l.path
}

// parseLocation reads "SPACE:/abs/path" as a Space path and anything else as
// a local one. A Space id may hold colons itself (direct:host:port), so the
// split is at the first ":/" with no "/" before it, as scp does; a local
// name with such a colon is written "./name".
func parseLocation(s string) (location, error) {
	if s == "" {
		return location{}, api.Errorf(api.KindInvalidArgument, "empty path")
	}
	if i := strings.Index(s, ":/"); i > 0 && !strings.Contains(s[:i], "/") {
		return location{space: s[:i], path: s[i+1:]}, nil
	}
	if i := strings.LastIndex(s, ":"); i > 0 && !strings.Contains(s[:i], "/") {
		return location{}, api.Errorf(api.KindInvalidArgument,
			"%q: a path in a Space must be absolute (SPACE:/path); write ./%s for a local file", s, s)
	}
	return location{path: s}, nil
}

func (env Env) runCp(ctx context.Context, args []string) int {
	fs := env.newFlags("cp", cpUsage)
	force := fs.Bool("force", false, "replace the destination if it exists")
	fs.BoolVar(force, "f", false, "short for --force")
	pos, rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	pos = append(pos, rest...)
	if len(pos) != 2 {
		fs.Usage()
		return ExitUsage
	}
	src, err := parseLocation(pos[0])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	dst, err := parseLocation(pos[1])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	switch {
	case src.space != "" && dst.space != "":
		return env.fail(ExitFailure, api.Errorf(api.KindInvalidArgument,
			"cp between two Spaces is not supported: copy to this machine, then on"))
	case src.space == "" && dst.space == "":
		return env.fail(ExitFailure, api.Errorf(api.KindInvalidArgument,
			"neither side is in a Space: write one as SPACE:/path"))
	}
	remote := src
	if dst.space != "" {
		remote = dst
	}
	c, _, err := env.client(remote.space)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if err := caps.Require(api.FeatureFiles); err != nil {
		return env.fail(ExitFailure, err)
	}
	x := &transfer{env: env, c: c, caps: caps, force: *force}
	if dst.space != "" {
		err = x.upload(ctx, src.path, dst)
	} else {
		err = x.download(ctx, src, dst.path)
	}
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	return ExitOK
}

// transfer is one cp between this machine and one Space.
type transfer struct {
	env   Env
	c     *client.Client
	caps  *api.Capabilities
	force bool
}

// retry reports whether a failed step may be tried again, and waits first.
func (x *transfer) retry(ctx context.Context, err error, attempt *int) bool {
	if ctx.Err() != nil || !api.AsError(err).Retryable || *attempt >= maxTransferRetries {
		return false
	}
	*attempt++
	select {
	case <-time.After(retryBackoff):
		return true
	case <-ctx.Done():
		return false
	}
}

// interrupted is the error of a cp stopped by its caller.
func interrupted(what string, done, total int64) error {
	return api.Errorf(api.KindCancelled, "%s interrupted at %d of %d bytes; run the same cp again to resume", what, done, total)
}

func (x *transfer) upload(ctx context.Context, src string, dst location) error {
	f, err := os.Open(src)
	if err != nil {
		return api.Errorf(api.KindIO, "open %s: %w", src, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return api.Errorf(api.KindIO, "stat %s: %w", src, err)
	}
	if !fi.Mode().IsRegular() {
		return api.Errorf(api.KindInvalidArgument, "%s is not a regular file: cp copies one file", src)
	}
	dest, err := x.remoteDest(ctx, dst.path, filepath.Base(src))
	if err != nil {
		return err
	}
	size := fi.Size()
	sum, err := hashFile(f, newProgress(x.env.Stderr, "sha256 "+filepath.Base(src), size))
	if err != nil {
		return api.Errorf(api.KindIO, "read %s: %w", src, err)
	}
	st, err := x.c.BeginUpload(ctx, api.UploadRequest{
		Path: dest, Size: size, SHA256: sum, Mode: api.FileModeString(fi.Mode()), Overwrite: x.force,
	})
	if err != nil {
		return err
	}
	prog := newProgress(x.env.Stderr, "upload "+filepath.Base(src), size)
	chunk := x.caps.Limits.UploadChunkBytes
	if chunk <= 0 {
		chunk = defaultChunkBytes
	}
	offset, attempt := st.Offset, 0
	prog.set(offset)
	for offset < size {
		n := min(chunk, size-offset)
		base := offset
		body := &countingReader{r: io.NewSectionReader(f, offset, n)}
		body.report = func(k int64) { prog.set(base + k) }
		next, err := x.c.PutChunk(ctx, st.ID, offset, body, n)
		if err != nil {
			if ctx.Err() != nil {
				return interrupted("upload of "+src, offset, size)
			}
			if !x.retry(ctx, err, &attempt) {
				return fmt.Errorf("upload %s to %s at offset %d: %w", src, dst.space+":"+dest, offset, err)
			}
			// Resume from what the Space holds, which may be more than we
			// know if the answer was lost.
			if cur, serr := x.c.UploadStatus(ctx, st.ID); serr == nil {
				offset = cur.Offset
			}
			continue
		}
		attempt = 0
		offset = next.Offset
	}
	res, err := x.c.CommitUpload(ctx, st.ID)
	if err != nil {
		return err
	}
	prog.finish()
	if res.SHA256 != sum {
		return api.Errorf(api.KindTransferFailed, "upload %s: the Space holds sha256 %s, this file has %s", dest, res.SHA256, sum)
	}
	fmt.Fprintf(x.env.Stdout, "%s -> %s:%s (%d bytes, sha256 %s verified in Space)\n", src, dst.space, dest, res.Size, res.SHA256)
	return nil
}

// remoteDest is where an upload lands: p itself, or p/name when p names a
// directory (by a trailing slash or because it is one). Without --force an
// existing file is refused before a byte is sent.
func (x *transfer) remoteDest(ctx context.Context, p, name string) (string, error) {
	if strings.HasSuffix(p, "/") {
		return path.Join(p, name), nil
	}
	fi, err := x.c.Stat(ctx, p)
	switch {
	case api.KindOf(err) == api.KindNotFound:
		return p, nil
	case err != nil:
		return "", err
	case fi.Type == api.TypeDir:
		p = path.Join(p, name)
		if _, err := x.c.Stat(ctx, p); err == nil && !x.force {
			return "", existsError(p)
		}
		return p, nil
	case !x.force:
		return "", existsError(p)
	}
	return p, nil
}

func existsError(p string) error {
	return api.Errorf(api.KindInvalidArgument, "%s exists; pass --force to replace it", p)
}

func (x *transfer) download(ctx context.Context, src location, dst string) error {
	fi, err := x.c.Stat(ctx, src.path)
	if err != nil {
		return err
	}
	if fi.Type != api.TypeFile {
		return api.Errorf(api.KindInvalidArgument, "%s is a %s, not a file: cp copies one file", src, fi.Type)
	}
	dest := dst
	if st, err := os.Stat(dst); strings.HasSuffix(dst, "/") || (err == nil && st.IsDir()) {
		dest = filepath.Join(dst, path.Base(src.path))
	}
	if _, err := os.Lstat(dest); err == nil && !x.force {
		return existsError(dest)
	}
	// The partial file names the remote size and time, so a resume never
	// continues an older version of the file.
	part := filepath.Join(filepath.Dir(dest),
		fmt.Sprintf(".%s.%d-%d%s", filepath.Base(dest), fi.Size, fi.Modified.UnixNano(), partialSuffix))
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return api.Errorf(api.KindIO, "create %s: %w", part, err)
	}
	keep := false
	defer func() {
		f.Close()
		if !keep {
			os.Remove(part)
		}
	}()
	h := sha256.New()
	// Resume: what an earlier run left is hashed again, then continued.
	have, err := io.Copy(h, io.LimitReader(f, fi.Size))
	if err != nil {
		return api.Errorf(api.KindIO, "read %s: %w", part, err)
	}
	if err := f.Truncate(have); err != nil {
		return api.Errorf(api.KindIO, "truncate %s: %w", part, err)
	}
	prog := newProgress(x.env.Stderr, "download "+path.Base(src.path), fi.Size)
	offset, attempt := have, 0
	prog.set(offset)
	out := io.MultiWriter(localWriter{f, part}, h)
	// trailerSum is the daemon's sha256 of a whole file it sent in one answer.
	var trailerSum string
	for offset < fi.Size {
		body, resp, err := x.open(ctx, src.path, offset, fi.Size-offset)
		if err == nil {
			base := offset
			cr := &countingReader{r: body, report: func(k int64) { prog.set(base + k) }}
			var n int64
			n, err = io.Copy(out, cr)
			body.Close()
			offset += n
			var ae *api.Error
			if err != nil && !errors.As(err, &ae) {
				// A failed read of the body: the connection, retryable.
				err = api.Errorf(api.KindEnv, "read %s: %w", src, err)
			}
			if err == nil && n == 0 && offset < fi.Size {
				return api.Errorf(api.KindTransferFailed, "download %s: the file shrank below %d bytes while it was read", src, fi.Size)
			}
			if err == nil && resp != nil {
				// Read to EOF: the trailer is there now.
				trailerSum = resp.Trailer.Get(api.HeaderSHA256)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				keep = true
				return interrupted("download of "+src.String(), offset, fi.Size)
			}
			if !x.retry(ctx, err, &attempt) {
				keep = api.AsError(err).Retryable
				return err
			}
			continue
		}
		attempt = 0
	}
	prog.finish()
	if offset != fi.Size {
		return api.Errorf(api.KindTransferFailed, "download %s: got %d bytes, the Space reported %d", src, offset, fi.Size)
	}
	if err := f.Sync(); err != nil {
		return api.Errorf(api.KindIO, "fsync %s: %w", part, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	remoteSum := trailerSum
	if len(remoteSum) != sha256.Size*2 {
		// A resumed download came in ranges, which carry no sha256: ask
		// the Space to hash the file.
		if remoteSum, err = x.remoteSHA256(ctx, src.path); err != nil {
			return err
		}
	}
	if remoteSum != "" && remoteSum != sum {
		return api.Errorf(api.KindTransferFailed, "download %s: sha256 mismatch (got %s, the Space has %s); nothing was written", src, sum, remoteSum)
	}
	if m, err := strconv.ParseUint(fi.Mode, 8, 32); err == nil {
		_ = f.Chmod(fs.FileMode(m).Perm())
	}
	if err := place(part, dest, x.force); err != nil {
		return err
	}
	verified := "sha256 " + sum + " verified"
	if remoteSum == "" {
		verified = "sha256 " + sum + ", size verified (no sha256 tool in the Space)"
	}
	fmt.Fprintf(x.env.Stdout, "%s -> %s (%d bytes, %s)\n", src, dest, offset, verified)
	return nil
}

// open reads the remote file from offset. From the start it is one
// whole-file answer, which carries the daemon's sha256 of what it sent as a
// trailer (resp is then set); a resume is a ranged read.
func (x *transfer) open(ctx context.Context, p string, offset, n int64) (io.ReadCloser, *http.Response, error) {
	if offset > 0 {
		body, _, err := x.c.Read(ctx, p, offset, n)
		return body, nil, err
	}
	resp, err := x.c.Do(ctx, http.MethodGet, api.PathFileContent, url.Values{"path": {p}}, nil, "")
	if err != nil {
		return nil, nil, err
	}
	return resp.Body, resp, nil
}

// place moves a finished download to dest. Without force it links, which
// fails when dest exists: no window in which a file that appeared meanwhile
// is overwritten.
func place(part, dest string, force bool) error {
	if force {
		if err := os.Rename(part, dest); err != nil {
			return api.Errorf(api.KindIO, "move into place %s: %w", dest, err)
		}
		return nil
	}
	err := os.Link(part, dest)
	switch {
	case err == nil:
		// The link is the file now; the partial name goes (the deferred
		// cleanup would remove it too).
		_ = os.Remove(part)
		return nil
	case errors.Is(err, fs.ErrExist):
		return existsError(dest)
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EXDEV):
		// No hard links on this file system: check, then rename.
		if _, err := os.Lstat(dest); err == nil {
			return existsError(dest)
		}
		if err := os.Rename(part, dest); err != nil {
			return api.Errorf(api.KindIO, "move into place %s: %w", dest, err)
		}
		return nil
	}
	return api.Errorf(api.KindIO, "move into place %s: %w", dest, err)
}

// localWriter tags a failed local write as kind io, so it is told apart
// from a broken connection (which is retried).
type localWriter struct {
	f    *os.File
	name string
}

func (w localWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil {
		return n, api.Errorf(api.KindIO, "write %s: %w", w.name, err)
	}
	return n, nil
}

// remoteSHA256 asks the Space for a file's sha256 with the tool it has
// (sha256sum on Linux, shasum on macOS); "" when it has neither.
func (x *transfer) remoteSHA256(ctx context.Context, p string) (string, error) {
	if ok, _ := x.caps.Supports(api.FeatureShell); !ok {
		return "", nil
	}
	for _, argv := range [][]string{{"sha256sum", "--", p}, {"shasum", "-a", "256", "--", p}} {
		res, err := x.c.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: argv}, MaxOutputBytes: maxHashOutput})
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			continue
		}
		if res.ExitCode != 0 {
			continue
		}
		fields := strings.Fields(res.Stdout)
		if len(fields) == 0 {
			continue
		}
		// sha256sum escapes odd names with a leading backslash on the line.
		sum := strings.TrimPrefix(fields[0], `\`)
		if len(sum) == sha256.Size*2 {
			return sum, nil
		}
	}
	return "", nil
}

// hashFile returns the sha256 of f from its start and rewinds nothing: the
// upload reads by offset.
func hashFile(f *os.File, prog *progress) (string, error) {
	h := sha256.New()
	cr := &countingReader{r: io.NewSectionReader(f, 0, 1<<62), report: prog.set}
	if _, err := io.Copy(h, cr); err != nil {
		return "", err
	}
	prog.finish()
	return hex.EncodeToString(h.Sum(nil)), nil
}
