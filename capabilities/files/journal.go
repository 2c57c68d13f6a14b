package files

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// The journal's layout under the state directory, and its limits.
const (
	journalDir        = "files"   // <state>/files: this package's part of the state directory
	journalUploads    = "uploads" // <state>/files/uploads/<id>.json: one per unfinished upload
	journalWrites     = "writes"  // <state>/files/writes/<hex>.json: one per named temp file of a write
	journalLock       = "lock"    // flock'ed while a daemon uses the journal
	journalVersion    = 1
	maxRecordBytes    = 16 << 10 // a record holds a path (at most MaxPathBytes) and a few fields
	recordSuffix      = ".json"
	writeRecordDigits = 16 // hex digits of a write record's name
)

// Journal records, in the daemon's state directory, what the daemon leaves
// on disk while it works and must find again after a crash: the unfinished
// uploads, whose partial files survive a restart on purpose (a client
// resumes after it), and the named temp files of writes on file systems
// without O_TMPFILE, which a crash would otherwise leave behind for ever.
// One daemon at a time uses a journal (an flock says which).
type Journal struct {
	dir  string // <state>/files
	log  *slog.Logger
	lock *os.File
}

// OpenJournal opens the journal under stateDir, making the directory (0700)
// if needed, and removes the temp files of writes that a crashed daemon
// recorded. The directory must be the daemon's own and writable by nobody
// else: the journal says which files to remove.
func OpenJournal(stateDir string, log *slog.Logger) (*Journal, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !filepath.IsAbs(stateDir) {
		return nil, fmt.Errorf("state directory %q is not absolute", stateDir)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := checkPrivate(stateDir, os.Stat); err != nil {
		return nil, err
	}
	j := &Journal{dir: filepath.Join(stateDir, journalDir), log: log}
	for _, d := range []string{j.dir, filepath.Join(j.dir, journalUploads), filepath.Join(j.dir, journalWrites)} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		if err := checkPrivate(d, os.Lstat); err != nil {
			return nil, err
		}
	}
	lock, err := os.OpenFile(filepath.Join(j.dir, journalLock), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s is in use by another cua-spacesd", stateDir)
		}
		return nil, fmt.Errorf("state directory: lock: %w", err)
	}
	j.lock = lock
	j.sweepWrites()
	return j, nil
}

// checkPrivate refuses a directory that is not ours or that others may
// write in: whoever may write there may make the daemon remove files.
func checkPrivate(p string, stat func(string) (fs.FileInfo, error)) error {
	fi, err := stat(p)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("state directory %s is not a directory", p)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("state directory %s is owned by uid %d, not by the daemon's uid %d", p, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("state directory %s is writable by others (mode %04o); make it 0700", p, fi.Mode().Perm())
	}
	return nil
}

// Close releases the journal; its records stay for the next daemon.
func (j *Journal) Close() error {
	if j == nil || j.lock == nil {
		return nil
	}
	return j.lock.Close() // closing the descriptor drops the flock
}

// put writes a record atomically (temp file, fsync, rename, fsync of the
// directory): a crash leaves the old record or the new one.
func (j *Journal) put(kind, name string, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	dir := filepath.Join(j.dir, kind)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name+recordSuffix))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// drop removes a record; a crash that loses the removal only leaves a
// record whose file is gone, which the next start drops.
func (j *Journal) drop(kind, name string) {
	if err := os.Remove(filepath.Join(j.dir, kind, name+recordSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		j.log.Warn("journal: cannot remove a record", "kind", kind, "name", name, "err", err)
	}
}

// records reads the records of a kind: each one's name (without suffix)
// and bytes. Stray temp files of put are removed.
func (j *Journal) records(kind string) map[string][]byte {
	dir := filepath.Join(j.dir, kind)
	ents, err := os.ReadDir(dir)
	if err != nil {
		j.log.Warn("journal: cannot read", "dir", dir, "err", err)
		return nil
	}
	out := map[string][]byte{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		name, ok := strings.CutSuffix(e.Name(), recordSuffix)
		if !ok || !e.Type().IsRegular() {
			os.Remove(p)
			continue
		}
		b, err := readRecord(p)
		if err != nil {
			j.log.Warn("journal: dropping an unreadable record", "record", p, "err", err)
			os.Remove(p)
			continue
		}
		out[name] = b
	}
	return out
}

func readRecord(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("over %d bytes", maxRecordBytes)
	}
	return b, nil
}

// decodeStrict decodes one JSON object, refusing unknown fields and
// anything after it.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the record")
	}
	return nil
}

// writeRecord is a named temp file of a write, recorded before it is made.
type writeRecord struct {
	Version int    `json:"v"`
	Dir     string `json:"dir"`  // the directory, as the write reached it
	Name    string `json:"name"` // ".<name>.cua-write-<hex>"
}

// parseWriteRecord checks a write record: only a temp file's name in an
// absolute directory is ever acted on.
func parseWriteRecord(b []byte) (writeRecord, error) {
	var r writeRecord
	if err := decodeStrict(b, &r); err != nil {
		return r, err
	}
	if r.Version != journalVersion {
		return r, fmt.Errorf("version %d, want %d", r.Version, journalVersion)
	}
	if _, err := CleanPath("dir", r.Dir); err != nil {
		return r, err
	}
	if !isTempName(r.Name) {
		return r, fmt.Errorf("%q is not the name of a write's temp file", r.Name)
	}
	return r, nil
}

// isTempName: ".<name>.cua-write-<16 hex>", one path element.
func isTempName(n string) bool {
	i := strings.LastIndex(n, writeInfix)
	if !strings.HasPrefix(n, ".") || strings.ContainsAny(n, "/\x00") || i < 1 || len(n) > maxNameBytes {
		return false
	}
	hex := n[i+len(writeInfix):]
	return len(hex) == writeRecordDigits && strings.Trim(hex, "0123456789abcdef") == ""
}

// recordTemp records the named temp file name about to be made in d, and
// returns what forgets it. A journal that cannot record only costs the
// sweep after a crash: the write goes on.
func (j *Journal) recordTemp(d *dir, name string) func() {
	if j == nil {
		return nil
	}
	id := randomHex(writeRecordDigits / 2)
	if err := j.put(journalWrites, id, writeRecord{Version: journalVersion, Dir: d.path, Name: name}); err != nil {
		j.log.Warn("journal: cannot record a temp file; a crash now would leave it behind", "dir", d.path, "name", name, "err", err)
		return nil
	}
	return func() { j.drop(journalWrites, id) }
}

// sweepWrites removes the temp files that a crashed daemon recorded: only
// a regular file of ours with one link, at a temp file's name, reached by
// the trust rule of resolve.go.
func (j *Journal) sweepWrites() {
	for id, b := range j.records(journalWrites) {
		r, err := parseWriteRecord(b)
		if err == nil {
			err = removeOurTemp(r)
		}
		switch {
		case err == nil:
			j.log.Info("removed the temp file of an interrupted write", "dir", r.Dir, "name", r.Name)
		case errors.Is(err, fs.ErrNotExist):
		default:
			j.log.Warn("journal: left a recorded temp file alone", "record", id, "err", err)
		}
		j.drop(journalWrites, id)
	}
}

func removeOurTemp(r writeRecord) error {
	d, err := newWalker("sweep").walk(nil, r.Dir)
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := openFileAt(d, r.Name, os.O_RDONLY)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return err
	}
	if !isOurs(fi) {
		return fmt.Errorf("%s in %s is not a temp file of ours", r.Name, r.Dir)
	}
	return unix.Unlinkat(d.fd, r.Name, 0)
}

// uploadRecord is an unfinished upload: what the client announced, and the
// partial file made for it.
type uploadRecord struct {
	Version   int    `json:"v"`
	ID        string `json:"id"`
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Mode      string `json:"mode,omitempty"` // octal, when the client gave one
	Overwrite bool   `json:"overwrite,omitempty"`
	Partial   string `json:"partial"` // the partial file's name in the destination's directory
	Dev       uint64 `json:"dev"`
	Ino       uint64 `json:"ino"`
}

// parseUploadRecord checks an upload record as an announcement is checked,
// and that its id and partial file name are the ones that announcement
// derives.
func parseUploadRecord(b []byte) (uploadRecord, UploadOp, error) {
	var r uploadRecord
	if err := decodeStrict(b, &r); err != nil {
		return r, UploadOp{}, err
	}
	if r.Version != journalVersion {
		return r, UploadOp{}, fmt.Errorf("version %d, want %d", r.Version, journalVersion)
	}
	op, err := CheckUpload(api.UploadRequest{Path: r.Path, Size: r.Size, SHA256: r.SHA256, Mode: r.Mode, Overwrite: r.Overwrite})
	if err != nil {
		return r, op, err
	}
	if id := uploadID(op); r.ID != id {
		return r, op, fmt.Errorf("id %q is not the upload's (%s)", r.ID, id)
	}
	if !strings.HasPrefix(r.Partial, ".") || !strings.HasSuffix(r.Partial, partialInfix+r.ID) ||
		strings.ContainsAny(r.Partial, "/\x00") || len(r.Partial) > maxNameBytes {
		return r, op, fmt.Errorf("%q is not the name of the upload's partial file", r.Partial)
	}
	return r, op, nil
}

// recordUpload records an upload whose partial file now exists.
func (j *Journal) recordUpload(u *upload) {
	if j == nil {
		return
	}
	r := uploadRecord{Version: journalVersion, ID: u.id, Path: u.op.Path, Size: u.op.Size, SHA256: u.op.SHA256,
		Overwrite: u.op.Overwrite, Partial: u.partial, Dev: u.dev, Ino: u.ino}
	if u.op.ModeGiven {
		r.Mode = fmt.Sprintf("%04o", unixMode(u.op.Mode))
	}
	if err := j.put(journalUploads, u.id, r); err != nil {
		j.log.Warn("journal: cannot record an upload; it will not survive a restart unless announced again", "id", u.id, "err", err)
	}
}

func (j *Journal) dropUpload(id string) {
	if j != nil {
		j.drop(journalUploads, id)
	}
}

// loadUploads re-registers the unfinished uploads of an earlier daemon, so
// that GET /v1/uploads/{id} answers after a restart and a client resumes.
// An upload idle longer than the timeout (by its partial file's mtime) is
// removed with its partial file, as the janitor would have; so is a record
// whose partial file is gone or is no longer the file made for it.
func (us *Uploads) loadUploads(now time.Time) {
	j := us.opts.Journal
	for id, b := range j.records(journalUploads) {
		r, op, err := parseUploadRecord(b)
		if err != nil || r.ID != id {
			j.log.Warn("journal: dropping an invalid upload record", "record", id, "err", err)
			j.drop(journalUploads, id)
			continue
		}
		if _, ok := us.byID[id]; ok || len(us.byID) >= MaxUploads {
			j.drop(journalUploads, id)
			continue
		}
		u, err := us.reopen(r, op, now)
		if err != nil {
			j.log.Info("journal: unfinished upload not resumed", "id", id, "path", op.Path, "reason", err)
			j.drop(journalUploads, id)
			continue
		}
		us.byID[id] = u
		us.log.Info("unfinished upload resumed after a restart", "id", id, "path", op.Path, "offset", u.offset)
	}
}

// errExpired: an upload idle past the timeout when the daemon came back.
var errExpired = errors.New("idle past the timeout; its partial file was removed")

// reopen finds the partial file of a recorded upload again.
func (us *Uploads) reopen(r uploadRecord, op UploadOp, now time.Time) (*upload, error) {
	d, name, _, err := openTarget("upload", op.Path, nil)
	if err != nil {
		return nil, err
	}
	u := &upload{op: op, id: r.ID, dir: d, name: name, partial: r.Partial, dev: r.Dev, ino: r.Ino, sem: make(chan struct{}, 1)}
	if u.partial != "."+shortName(name, partialInfix+r.ID) {
		d.Close()
		return nil, fmt.Errorf("the destination now resolves elsewhere")
	}
	f, err := u.openPartial(os.O_RDONLY)
	if err != nil {
		d.Close()
		return nil, err
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		d.Close()
		return nil, err
	}
	if now.Sub(fi.ModTime()) >= us.opts.IdleTimeout || fi.Size() > op.Size {
		_ = unix.Unlinkat(d.fd, u.partial, 0)
		d.Close()
		return nil, errExpired
	}
	u.offset, u.lastActive = fi.Size(), fi.ModTime()
	return u, nil
}
