package api

import (
	"errors"
	"io/fs"
	"time"
)

// Routes of the files capability. Paths travel in the "path" query
// parameter (or body field) and must be absolute.
const (
	PathFileStat    = "/v1/files/stat"
	PathFileList    = "/v1/files/list"
	PathFileMkdir   = "/v1/files/mkdir"
	PathFileMove    = "/v1/files/move"
	PathFileRemove  = "/v1/files/remove"
	PathFileContent = "/v1/files/content" // GET reads (Range), PUT writes atomically
	PathFileWatch   = "/v1/files/watch"   // WebSocket
	PathUploads     = "/v1/uploads"
	PathUpload      = "/v1/uploads/{id}"
	PathUploadDone  = "/v1/uploads/{id}/commit"
)

// Response headers of GET /v1/files/content.
const (
	HeaderFileSize = "X-Cua-File-Size" // the whole file's size, whatever the range
	// HeaderSHA256 is the sha256 of the bytes written (PUT answer header), or
	// of the whole file sent (GET without a range: a trailer, read it from
	// http.Response.Trailer once the body is read to EOF).
	HeaderSHA256 = "X-Cua-Sha256"
)

// ErrRangeNotSatisfiable is the cause of the invalid_argument error of a
// read whose window starts at or past the end of a non-empty file. It is in
// the contract, not in capabilities/files, because HTTP answers it with a
// status of its own (416), and the daemon's HTTP layer knows no capability.
var ErrRangeNotSatisfiable = errors.New("range not satisfiable")

// FileType is the kind of a directory entry.
type FileType string

const (
	TypeFile    FileType = "file"
	TypeDir     FileType = "dir"
	TypeSymlink FileType = "symlink"
	TypeOther   FileType = "other"
)

// FileInfo describes one file or directory.
type FileInfo struct {
	Path     string    `json:"path"`
	Name     string    `json:"name"`
	Type     FileType  `json:"type"`
	Size     int64     `json:"size"`
	Mode     string    `json:"mode"` // octal permission bits, e.g. "0644"
	Modified time.Time `json:"modified"`
	// Target is a symlink's target.
	Target string `json:"target,omitempty"`
}

// FileModeString renders permission bits the way FileInfo.Mode carries them.
func FileModeString(m fs.FileMode) string {
	return "0" + formatOctal(uint32(m.Perm()))
}

func formatOctal(v uint32) string {
	if v == 0 {
		return "000"
	}
	var b [12]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%8)
		v /= 8
	}
	s := string(b[i:])
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

// ListResult is the answer of GET /v1/files/list.
type ListResult struct {
	Path    string     `json:"path"`
	Entries []FileInfo `json:"entries"`
	// Truncated is set when the listing stopped at the daemon's entry limit.
	Truncated bool `json:"truncated"`
}

// MkdirRequest is the body of POST /v1/files/mkdir.
type MkdirRequest struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents"`
	Mode    string `json:"mode,omitempty"` // octal, default 0755
}

// MoveRequest is the body of POST /v1/files/move.
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite"`
}

// RemoveRequest is the body of POST /v1/files/remove.
type RemoveRequest struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// WriteResult is the answer of PUT /v1/files/content and of an upload commit.
type WriteResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Replayed says the answer is that of an earlier call with the same
	// Idempotency-Key.
	Replayed bool `json:"replayed,omitempty"`
}

// UploadRequest is the body of POST /v1/uploads: announce a resumable upload.
type UploadRequest struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// SHA256 (hex) is checked at commit; a mismatch leaves nothing at Path.
	SHA256    string `json:"sha256"`
	Mode      string `json:"mode,omitempty"`
	Overwrite bool   `json:"overwrite"`
}

// UploadState is the answer of POST /v1/uploads, PUT and GET /v1/uploads/{id}.
// A client resumes by sending the bytes from Offset on.
type UploadState struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
}

// WatchEvent is one WebSocket message of GET /v1/files/watch.
type WatchEvent struct {
	// Op is "create", "write", "remove", "rename", "chmod", or "overflow"
	// when events were dropped and the client should re-list.
	Op   string `json:"op"`
	Path string `json:"path,omitempty"`
}
