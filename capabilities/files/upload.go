package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io/fs"
	"log/slog"
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
	// dirClosed: dir was closed (guarded by sem).
	dirClosed bool
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
		us.mu.Lock()
		u.gone = true
		us.mu.Unlock()
		select {
		case u.sem <- struct{}{}:
			u.closeDir()
			<-u.sem
		default:
			// A chunk or commit works in u.dir: release closes it.
		}
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
		u.closeDir()
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
	gone := u.gone
	us.mu.Unlock()
	if gone {
		u.closeDir()
	}
	<-u.sem
}

// closeDir closes the upload's directory once it is forgotten; the caller
// holds sem, so no chunk works in it.
func (u *upload) closeDir() {
	if !u.dirClosed {
		u.dirClosed = true
		u.dir.Close()
	}
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
	u.closeDir()
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
