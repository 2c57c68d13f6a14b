package files

import (
	"context"
	"encoding"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
)

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
