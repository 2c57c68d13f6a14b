package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

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
	op      UploadOp
	id      string
	partial string
	dir     string
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
	go u.janitor()
	return u
}

// Close stops the janitor. Partial files stay: an upload announced again
// after a restart resumes from them.
func (us *Uploads) Close() {
	us.once.Do(func() { close(us.stop) })
	<-us.done
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
		os.Remove(u.partial)
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
		u.op.Overwrite, u.op.Mode, u.op.ModeGiven = op.Overwrite, op.Mode, op.ModeGiven
		return u.state(), nil
	}
	if len(us.byID) >= MaxUploads {
		return api.UploadState{}, api.Errorf(api.KindLimitExceeded,
			"upload %s: %d uploads are unfinished already; commit or abort some", op.Path, MaxUploads)
	}
	if _, err := prepareTarget("upload", op.Path, nil); err != nil {
		return api.UploadState{}, err
	}
	if !op.Overwrite {
		if _, err := os.Lstat(op.Path); err == nil {
			return api.UploadState{}, errDestExists("upload", op.Path)
		}
	}
	dir := filepath.Dir(op.Path)
	u := &upload{op: op, id: id, dir: dir, sem: make(chan struct{}, 1), lastActive: time.Now(),
		partial: filepath.Join(dir, "."+shortName(filepath.Base(op.Path), partialInfix+id))}
	f, err := os.OpenFile(u.partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		f.Close()
	case errors.Is(err, fs.ErrExist):
		// Left by an earlier daemon: resume from what it holds. Its hash is
		// rebuilt from the file before the next chunk.
		if u.offset, err = adoptPartial(u.partial, op.Size); err != nil {
			return api.UploadState{}, writeError("upload", op.Path, err)
		}
		if u.offset > 0 {
			us.log.Info("upload adopted from its partial file", "id", id, "path", op.Path, "offset", u.offset)
		}
	default:
		return api.UploadState{}, writeError("upload", op.Path, err)
	}
	us.byID[id] = u
	return u.state(), nil
}

// partialFlags are added to every open of a partial file: its name is
// predictable (derived from path, size and sha256), so whoever may write in
// the destination directory can plant a symlink there, and the daemon (often
// root) must not write through it into another file.
const partialFlags = syscall.O_NOFOLLOW

// adoptPartial returns the offset to resume from in the partial file an
// earlier daemon left at path. Only a regular file with one link, owned by
// us, is adopted; anything else at that name (a symlink, a hard link to
// another file, a FIFO, someone else's file) is not ours to write into: it
// is removed and the upload starts afresh from an empty file of our own.
func adoptPartial(path string, size int64) (int64, error) {
	// O_NONBLOCK: opening a planted FIFO must not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDWR|partialFlags|syscall.O_NONBLOCK, 0)
	if err == nil {
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return 0, err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() &&
			uint64(st.Nlink) == 1 && int(st.Uid) == os.Geteuid() {
			if fi.Size() <= size {
				return fi.Size(), nil
			}
			return 0, f.Truncate(0)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	nf, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	return 0, nf.Close()
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
	os.Remove(u.partial)
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
// current offset. When body fails half way (the connection was cut), what
// arrived is kept and the answer's offset says where to resume.
func (us *Uploads) Put(ctx context.Context, id string, offset int64, body io.Reader, counter func(int)) (api.UploadState, error) {
	u, err := us.acquire(ctx, id)
	if err != nil {
		return api.UploadState{}, err
	}
	defer us.release(u)
	if offset != u.offset {
		return u.state(), api.Errorf(api.KindInvalidArgument,
			"upload %s: chunk at offset %d, but the upload is at offset %d; send from offset %d", id, offset, u.offset, u.offset)
	}
	if err := u.syncHash(); err != nil {
		return u.state(), us.failed(u, err)
	}
	f, err := os.OpenFile(u.partial, os.O_WRONLY|partialFlags, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			us.drop(u)
			return api.UploadState{}, api.Errorf(api.KindNotFound, "upload %s: its partial file %s vanished; announce the upload again", id, u.partial)
		}
		return u.state(), us.failed(u, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return u.state(), us.failed(u, err)
	}
	remaining := u.op.Size - offset
	n, rerr, werr := copyHashed(f, io.LimitReader(body, remaining), u.h, counter)
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
	if n == remaining {
		// The announced size is reached: anything more is the client's error.
		var one [1]byte
		if m, _ := io.ReadFull(body, one[:]); m > 0 {
			return u.state(), api.Errorf(api.KindInvalidArgument,
				"upload %s: the chunk goes past the announced size of %d bytes", id, u.op.Size)
		}
	}
	return u.state(), nil
}

// failed turns a write failure into its answer. A full disk drops the
// upload: its partial file would only hold the space nobody has.
func (us *Uploads) failed(u *upload, err error) error {
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
	f, err := os.OpenFile(u.partial, os.O_RDONLY|partialFlags, 0)
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
	t, err := prepareTarget("upload", u.op.Path, mode)
	if err != nil {
		return api.WriteResult{}, err
	}
	f, err := os.OpenFile(u.partial, os.O_WRONLY|partialFlags, 0)
	if err != nil {
		return api.WriteResult{}, us.failed(u, err)
	}
	if err := t.install(f, u.partial, op.Overwrite); err != nil {
		f.Close()
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
	return api.WriteResult{Path: u.op.Path, Size: u.op.Size, SHA256: got}, nil
}
