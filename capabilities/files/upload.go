package files

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// Limits of resumable uploads.
const (
	// UploadIdleTimeout is how long an upload may sit without a call before
	// the janitor drops it and its partial file.
	UploadIdleTimeout = time.Hour
	// MaxUploadChunkBytes bounds one PUT of an upload; clients read it from
	// the capabilities' limits.upload_chunk_bytes.
	MaxUploadChunkBytes = 64 << 20
	// MaxUploads bounds the unfinished uploads held at once.
	MaxUploads = 256
	// uploadIDHexDigits is the length of an upload id.
	uploadIDHexDigits = 32
	// partialInfix marks a partial upload file: ".<name>.cua-upload-<id>".
	partialInfix = ".cua-upload-"
)

// UploadOptions adjust an Uploads.
type UploadOptions struct {
	IdleTimeout time.Duration // default UploadIdleTimeout
	Logger      *slog.Logger
	// Journal, when set, records the unfinished uploads: a new Uploads
	// takes them up again, so that they survive a restart of the daemon.
	Journal *Journal
}

// Uploads holds the unfinished resumable uploads. The partial data of each
// lives in the destination directory, so the final rename is atomic, and its
// id is derived from path, size and sha256, so a client that restarts (or a
// daemon that restarts) finds the same upload again by announcing it again.
type Uploads struct {
	opts UploadOptions
	log  *slog.Logger

	mu   sync.Mutex
	byID map[string]*upload

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type upload struct {
	op UploadOp
	id string
	// dir holds the destination and the partial file; both are reached
	// relative to it, resolved once when the upload began, so a symlink
	// swapped into the path later cannot move the upload elsewhere.
	dir     *dir
	name    string // the destination's name in dir
	partial string // the partial file's name in dir
	// dev and ino identify the partial file we made: whatever else comes
	// to sit at its (predictable) name is not written into.
	dev, ino uint64
	// sem admits one chunk or commit at a time.
	sem chan struct{}

	// Guarded by Uploads.mu.
	offset     int64
	lastActive time.Time
	gone       bool

	// Guarded by sem: the running hash of the partial file's first hashed
	// bytes. When hashed != offset (an adopted partial) it is rebuilt by
	// re-reading the file before the next chunk or the commit.
	h      hash.Hash
	hashed int64
}

// NewUploads starts the registry and its janitor; Close stops the janitor.
func NewUploads(opts UploadOptions) *Uploads {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = UploadIdleTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	u := &Uploads{opts: opts, log: opts.Logger, byID: map[string]*upload{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if opts.Journal != nil {
		u.loadUploads(time.Now())
	}
	go u.janitor()
	return u
}

// Close stops the janitor. Partial files stay: an upload announced again
// after a restart resumes from them.
func (us *Uploads) Close() {
	us.once.Do(func() { close(us.stop) })
	<-us.done
	us.mu.Lock()
	all := make([]*upload, 0, len(us.byID))
	for _, u := range us.byID {
		all = append(all, u)
	}
	clear(us.byID)
	us.mu.Unlock()
	for _, u := range all {
		u.sem <- struct{}{} // a running chunk works in u.dir: let it end
		us.mu.Lock()
		u.gone = true
		us.mu.Unlock()
		u.dir.Close()
		<-u.sem
	}
}

func (us *Uploads) janitor() {
	defer close(us.done)
	every := us.opts.IdleTimeout / 4
	every = max(min(every, time.Minute), 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-us.stop:
			return
		case now := <-t.C:
			us.expire(now)
		}
	}
}

// expire drops uploads idle longer than the timeout, skipping any busy one.
func (us *Uploads) expire(now time.Time) {
	us.mu.Lock()
	var old []*upload
	for id, u := range us.byID {
		if now.Sub(u.lastActive) < us.opts.IdleTimeout {
			continue
		}
		select {
		case u.sem <- struct{}{}:
		default:
			continue // a chunk is running: not idle
		}
		u.gone = true
		delete(us.byID, id)
		old = append(old, u)
	}
	us.mu.Unlock()
	for _, u := range old {
		u.removePartial()
		us.opts.Journal.dropUpload(u.id)
		u.dir.Close()
		<-u.sem
		us.log.Info("upload expired", "id", u.id, "path", u.op.Path, "offset", u.offset)
	}
}

// uploadID derives the id of an upload from what the client announces.
func uploadID(op UploadOp) string {
	sum := sha256.Sum256([]byte(op.Path + "\x00" + strconv.FormatInt(op.Size, 10) + "\x00" + op.SHA256))
	return hex.EncodeToString(sum[:])[:uploadIDHexDigits]
}

// Begin announces an upload, or finds the unfinished one of the same path,
// size and sha256 (in memory, or its partial file after a daemon restart).
func (us *Uploads) Begin(req api.UploadRequest) (api.UploadState, error) {
	op, err := CheckUpload(req)
	if err != nil {
		return api.UploadState{}, err
	}
	id := uploadID(op)
	us.mu.Lock()
	defer us.mu.Unlock()
	if u, ok := us.byID[id]; ok {
		u.lastActive = time.Now()
		if u.op != op {
			u.op.Overwrite, u.op.Mode, u.op.ModeGiven = op.Overwrite, op.Mode, op.ModeGiven
			us.opts.Journal.recordUpload(u)
		}
		return u.state(), nil
	}
	if len(us.byID) >= MaxUploads {
		return api.UploadState{}, api.Errorf(api.KindLimitExceeded,
			"upload %s: %d uploads are unfinished already; commit or abort some", op.Path, MaxUploads)
	}
	d, name, _, err := openTarget("upload", op.Path, nil)
	if err != nil {
		return api.UploadState{}, err
	}
	u := &upload{op: op, id: id, dir: d, name: name, sem: make(chan struct{}, 1), lastActive: time.Now(),
		partial: "." + shortName(name, partialInfix+id)}
	if err := us.start(u); err != nil {
		d.Close()
		return api.UploadState{}, err
	}
	us.opts.Journal.recordUpload(u)
	us.byID[id] = u
	return u.state(), nil
}

// start checks the destination may be taken and makes (or adopts) the
// partial file of u.
func (us *Uploads) start(u *upload) error {
	if !u.op.Overwrite {
		if _, err := u.dir.lstat(u.name); err == nil {
			return errDestExists("upload", u.op.Path)
		}
	}
	f, err := createAt(u.dir, u.partial)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		// Left by an earlier daemon: resume from what it holds. Its hash is
		// rebuilt from the file before the next chunk.
		if f, err = adoptPartial(u.dir, u.partial, u.op.Size); err != nil {
			return writeError("upload", u.op.Path, err)
		}
	default:
		return writeError("upload", u.op.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return writeError("upload", u.op.Path, err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	u.dev, u.ino, u.offset = uint64(st.Dev), uint64(st.Ino), fi.Size()
	if u.offset > 0 {
		us.log.Info("upload adopted from its partial file", "id", u.id, "path", u.op.Path, "offset", u.offset)
	}
	return nil
}

// adoptPartial opens the partial file an earlier daemon left at name in
// d. Only a regular file with one link, owned by us and not longer than the
// upload, is adopted; anything else at that name (a symlink, a hard link to
// another file, a FIFO, someone else's file) is not ours to write into: it
// is removed and the upload starts afresh from an empty file of our own.
func adoptPartial(d *dir, name string, size int64) (*os.File, error) {
	f, err := openFileAt(d, name, os.O_RDWR)
	if err == nil {
		fi, err := f.Stat()
		if err == nil && isOurs(fi) && fi.Size() <= size {
			return f, nil
		}
		f.Close()
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return createAt(d, name)
}

// openFileAt opens name in d without following a symlink, and without
// waiting on a FIFO planted there.
func openFileAt(d *dir, name string, flags int) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path.Join(d.path, name)), nil
}

// isOurs: a regular file with one link, owned by the daemon's user.
func isOurs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && uint64(st.Nlink) == 1 && int(st.Uid) == os.Geteuid()
}

// openPartial opens the upload's partial file, which must still be the
// very file it made or adopted.
func (u *upload) openPartial(flags int) (*os.File, error) {
	f, err := openFileAt(u.dir, u.partial, flags)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	if uint64(st.Dev) != u.dev || uint64(st.Ino) != u.ino || !isOurs(fi) {
		f.Close()
		return nil, errPartialReplaced
	}
	return f, nil
}

// errPartialReplaced: something else now sits at the partial file's name.
var errPartialReplaced = errors.New("the partial file was replaced")

// removePartial removes the partial file if it is still ours.
func (u *upload) removePartial() {
	if f, err := u.openPartial(os.O_RDONLY); err == nil {
		f.Close()
		_ = unix.Unlinkat(u.dir.fd, u.partial, 0)
	}
}

func (u *upload) state() api.UploadState {
	return api.UploadState{ID: u.id, Path: u.op.Path, Size: u.op.Size, Offset: u.offset}
}

// acquire finds an upload and takes its one-writer slot.
func (us *Uploads) acquire(ctx context.Context, id string) (*upload, error) {
	us.mu.Lock()
	u, ok := us.byID[id]
	if ok {
		u.lastActive = time.Now()
	}
	us.mu.Unlock()
	if !ok {
		return nil, errNoUpload(id)
	}
	select {
	case u.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, api.Errorf(api.KindCancelled, "upload %s: %w", id, ctx.Err())
	}
	us.mu.Lock()
	gone := u.gone
	us.mu.Unlock()
	if gone {
		<-u.sem
		return nil, errNoUpload(id)
	}
	return u, nil
}

func (us *Uploads) release(u *upload) {
	us.mu.Lock()
	u.lastActive = time.Now()
	us.mu.Unlock()
	<-u.sem
}

func errNoUpload(id string) error {
	return api.Errorf(api.KindNotFound, "no unfinished upload %s (committed, aborted or expired)", id).
		WithHint("announce the upload again with POST /v1/uploads")
}

// Status returns how much of an upload has landed.
func (us *Uploads) Status(id string) (api.UploadState, error) {
	us.mu.Lock()
	defer us.mu.Unlock()
	u, ok := us.byID[id]
	if !ok {
		return api.UploadState{}, errNoUpload(id)
	}
	u.lastActive = time.Now()
	return u.state(), nil
}

// drop forgets an upload and deletes its partial file. The caller holds sem.
func (us *Uploads) drop(u *upload) {
	us.mu.Lock()
	u.gone = true
	delete(us.byID, u.id)
	us.mu.Unlock()
	u.removePartial()
	us.opts.Journal.dropUpload(u.id)
	u.dir.Close()
}

// Abort drops an upload and its partial data.
func (us *Uploads) Abort(ctx context.Context, id string) error {
	u, err := us.acquire(ctx, id)
	if err != nil {
		return err
	}
	defer us.release(u)
	us.drop(u)
	return nil
}

// Put appends the bytes of body at offset, which must equal the upload's
// current offset. length is the body's announced length, or -1 when it
// comes without one (a chunked request). A chunk that runs past the
// announced size, or past MaxUploadChunkBytes, is refused whole, and none
// of it is kept: with a length, before a byte is read; without one, its
// bytes are staged past the upload's offset and cut off again, so the
// partial file ends where the answer's offset says. When body fails half
// way (the connection was cut), what arrived is kept and the answer's
// offset says where to resume.
func (us *Uploads) Put(ctx context.Context, id string, offset, length int64, body io.Reader, counter func(int)) (api.UploadState, error) {
	u, err := us.acquire(ctx, id)
	if err != nil {
		return api.UploadState{}, err
	}
	defer us.release(u)
	if offset != u.offset {
		return u.state(), api.Errorf(api.KindInvalidArgument,
			"upload %s: chunk at offset %d, but the upload is at offset %d; send from offset %d", id, offset, u.offset, u.offset)
	}
	remaining := u.op.Size - offset
	if length > MaxUploadChunkBytes {
		return u.state(), errChunkTooBig(id, length)
	}
	if length > remaining {
		return u.state(), errPastSize(u, length)
	}
	if err := u.syncHash(); err != nil {
		return u.state(), us.failed(u, err)
	}
	f, err := u.openPartial(os.O_WRONLY)
	if err != nil {
		return api.UploadState{}, us.failed(u, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return u.state(), us.failed(u, err)
	}
	// The hash as it was, to take back the bytes of a refused chunk.
	before, err := u.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return u.state(), us.failed(u, err)
	}
	limit := min(remaining, MaxUploadChunkBytes)
	n, rerr, werr := copyHashed(f, io.LimitReader(body, limit), u.h, counter)
	if werr == nil && rerr == nil && n == limit {
		// At the limit: one byte more means the chunk is refused whole.
		var one [1]byte
		if m, _ := io.ReadFull(body, one[:]); m > 0 {
			if err := f.Truncate(offset); err != nil {
				return u.state(), us.failed(u, err)
			}
			if err := u.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(before); err != nil {
				return u.state(), us.failed(u, err)
			}
			if limit < remaining {
				return u.state(), errChunkTooBig(id, -1)
			}
			return u.state(), errPastSize(u, -1)
		}
	}
	u.hashed += n
	us.mu.Lock()
	u.offset += n
	us.mu.Unlock()
	if werr != nil {
		return u.state(), us.failed(u, werr)
	}
	if rerr != nil {
		return u.state(), api.Errorf(api.KindTransferFailed,
			"upload %s: the chunk ended early (%v); %d bytes landed, resume from offset %d", id, rerr, n, u.offset)
	}
	return u.state(), nil
}

func errChunkTooBig(id string, length int64) error {
	size := "more than " + strconv.Itoa(MaxUploadChunkBytes)
	if length >= 0 {
		size = strconv.FormatInt(length, 10)
	}
	return api.Errorf(api.KindInvalidArgument, "upload %s: a chunk of %s bytes is over the limit of %d (limits.upload_chunk_bytes); nothing of it was kept",
		id, size, MaxUploadChunkBytes)
}

func errPastSize(u *upload, length int64) error {
	size := "more"
	if length >= 0 {
		size = strconv.FormatInt(length, 10)
	}
	return api.Errorf(api.KindInvalidArgument,
		"upload %s: the chunk holds %s bytes, but only %d remain of the announced %d from offset %d; nothing of it was kept",
		u.id, size, u.op.Size-u.offset, u.op.Size, u.offset)
}

// failed turns a write failure into its answer. A full disk drops the
// upload: its partial file would only hold the space nobody has.
func (us *Uploads) failed(u *upload, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errPartialReplaced) {
		us.drop(u)
		return api.Errorf(api.KindNotFound, "upload %s: its partial file %s vanished or was replaced; announce the upload again",
			u.id, path.Join(u.dir.path, u.partial))
	}
	if isDiskFull(err) {
		us.drop(u)
		return api.Errorf(api.KindIO, "disk full while uploading %s; the upload was dropped and nothing was changed", u.op.Path).
			WithHint("free space on the Space's disk (or its quota), then upload again").WithCause(err)
	}
	return fsError("upload", u.op.Path, err)
}

// syncHash rebuilds the running hash from the partial file when it does not
// cover the file's bytes (an upload adopted after a restart).
func (u *upload) syncHash() error {
	if u.h != nil && u.hashed == u.offset {
		return nil
	}
	f, err := u.openPartial(os.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, rerr, _ := copyHashed(io.Discard, io.LimitReader(f, u.offset), h, nil)
	if rerr != nil {
		return rerr
	}
	if n != u.offset {
		return api.Errorf(api.KindIO, "upload %s: its partial file holds %d bytes, %d expected", u.op.Path, n, u.offset)
	}
	u.h, u.hashed = h, n
	return nil
}

// Commit verifies the sha256 of all the bytes and moves the file into
// place. A mismatch deletes the partial file: nothing is written.
func (us *Uploads) Commit(ctx context.Context, id string) (api.WriteResult, error) {
	u, err := us.acquire(ctx, id)
	if err != nil {
		return api.WriteResult{}, err
	}
	defer us.release(u)
	if u.offset != u.op.Size {
		return api.WriteResult{}, api.Errorf(api.KindInvalidArgument,
			"upload %s: %d of %d bytes have landed; send the rest from offset %d, then commit", id, u.offset, u.op.Size, u.offset)
	}
	if err := u.syncHash(); err != nil {
		return api.WriteResult{}, us.failed(u, err)
	}
	got := hex.EncodeToString(u.h.Sum(nil))
	if got != u.op.SHA256 {
		us.drop(u)
		return api.WriteResult{}, api.Errorf(api.KindTransferFailed,
			"upload %s: sha256 mismatch (got %s, want %s); nothing was written", u.op.Path, got, u.op.SHA256)
	}
	// Begin may update the overwrite flag and mode at any time (it holds
	// us.mu, not sem): take them once, under the same lock.
	us.mu.Lock()
	op := u.op
	us.mu.Unlock()
	var mode *fs.FileMode
	if op.ModeGiven {
		mode = &op.Mode
	}
	// The destination's mode and owner as they are now, by the rules of
	// a write: what was there when the upload began may have changed.
	meta, err := metaFor("upload", op.Path, u.dir, u.name, mode)
	if err != nil {
		return api.WriteResult{}, err
	}
	f, err := u.openPartial(os.O_WRONLY)
	if err != nil {
		return api.WriteResult{}, us.failed(u, err)
	}
	// The partial file is the upload's: a failed commit keeps it unless
	// the upload is dropped.
	t := &tempFile{d: u.dir, f: f, name: u.partial}
	if err := t.commit(meta, u.name, op.Overwrite); err != nil {
		t.close()
		if errors.Is(err, os.ErrExist) {
			// Keep the upload: the client may commit again after removing
			// the destination, without sending the bytes again.
			return api.WriteResult{}, errDestExists("upload", u.op.Path)
		}
		us.drop(u)
		if isDiskFull(err) {
			return api.WriteResult{}, writeError("upload", u.op.Path, err)
		}
		return api.WriteResult{}, fsError("upload", u.op.Path, err)
	}
	us.mu.Lock()
	u.gone = true
	delete(us.byID, u.id)
	us.mu.Unlock()
	us.opts.Journal.dropUpload(u.id)
	u.dir.Close()
	return api.WriteResult{Path: u.op.Path, Size: u.op.Size, SHA256: got}, nil
}
