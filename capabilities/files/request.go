package files

import (
	"io/fs"
	"strconv"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// Defaults of created files and directories, before the umask of mkdir.
const (
	DefaultDirMode  fs.FileMode = 0o755
	DefaultFileMode fs.FileMode = 0o644
)

// ParseMode parses an octal mode ("0644", "755", "0o600"); "" yields def.
// Only permission, setuid, setgid and sticky bits are accepted.
func ParseMode(arg, s string, def fs.FileMode) (fs.FileMode, error) {
	if s == "" {
		return def, nil
	}
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O")
	v, err := strconv.ParseUint(digits, 8, 32)
	if err != nil || v > 0o7777 || digits == "" {
		return 0, api.Errorf(api.KindInvalidArgument, "%s %q is not an octal mode from 0000 to 7777", arg, s)
	}
	m := fs.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if v&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if v&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m, nil
}

// MkdirOp is a checked mkdir request.
type MkdirOp struct {
	Path    string
	Parents bool
	Mode    fs.FileMode
	// ModeGiven is set when the caller named a mode: it is then applied
	// exactly, past the umask.
	ModeGiven bool
}

// CheckMkdir validates a mkdir request.
func CheckMkdir(req api.MkdirRequest) (MkdirOp, error) {
	p, err := CleanPath("path", req.Path)
	if err != nil {
		return MkdirOp{}, err
	}
	m, err := ParseMode("mode", req.Mode, DefaultDirMode)
	if err != nil {
		return MkdirOp{}, err
	}
	return MkdirOp{Path: p, Parents: req.Parents, Mode: m, ModeGiven: req.Mode != ""}, nil
}

// CheckMove validates a move request.
func CheckMove(req api.MoveRequest) (api.MoveRequest, error) {
	from, err := CleanPath("from", req.From)
	if err != nil {
		return req, err
	}
	to, err := CleanPath("to", req.To)
	if err != nil {
		return req, err
	}
	if from == "/" || to == "/" {
		return req, api.Errorf(api.KindInvalidArgument, "move %s -> %s: the root directory cannot be moved or replaced", from, to)
	}
	if from == to {
		return req, api.Errorf(api.KindInvalidArgument, "move %s: from and to are the same path", from)
	}
	if strings.HasPrefix(to, from+"/") {
		return req, api.Errorf(api.KindInvalidArgument, "move %s -> %s: a directory cannot move into itself", from, to)
	}
	return api.MoveRequest{From: from, To: to, Overwrite: req.Overwrite}, nil
}

// CheckRemove validates a remove request. "/" is refused whatever the flags.
func CheckRemove(req api.RemoveRequest) (api.RemoveRequest, error) {
	p, err := CleanPath("path", req.Path)
	if err != nil {
		return req, err
	}
	if p == "/" {
		return req, api.Errorf(api.KindInvalidArgument, "remove /: refusing to remove the root directory")
	}
	return api.RemoveRequest{Path: p, Recursive: req.Recursive}, nil
}

// UploadOp is a checked upload announcement.
type UploadOp struct {
	Path      string
	Size      int64
	SHA256    string // lower-case hex
	Mode      fs.FileMode
	ModeGiven bool
	Overwrite bool
}

// CheckUpload validates an upload announcement.
func CheckUpload(req api.UploadRequest) (UploadOp, error) {
	p, err := CleanPath("path", req.Path)
	if err != nil {
		return UploadOp{}, err
	}
	if p == "/" {
		return UploadOp{}, api.Errorf(api.KindInvalidArgument, "upload /: the root directory cannot be a file")
	}
	if req.Size < 0 {
		return UploadOp{}, api.Errorf(api.KindInvalidArgument, "upload %s: size %d is negative", p, req.Size)
	}
	sum := strings.ToLower(req.SHA256)
	if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return UploadOp{}, api.Errorf(api.KindInvalidArgument, "upload %s: sha256 %q is not 64 hex digits", p, req.SHA256)
	}
	m, err := ParseMode("mode", req.Mode, DefaultFileMode)
	if err != nil {
		return UploadOp{}, err
	}
	return UploadOp{Path: p, Size: req.Size, SHA256: sum, Mode: m, ModeGiven: req.Mode != "", Overwrite: req.Overwrite}, nil
}
