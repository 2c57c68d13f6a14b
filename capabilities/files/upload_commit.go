package files

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"

	"github.com/trycua/cua-spacesd/api"
)

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
	u.closeDir()
	return api.WriteResult{Path: u.op.Path, Size: u.op.Size, SHA256: got}, nil
}
