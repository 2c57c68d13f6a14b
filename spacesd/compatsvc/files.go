package compatsvc

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// The file commands map onto capabilities/files: atomic writes, appends
// that cut back on failure, ranged reads, and the trust rule for symlinks
// of a daemon that runs as root.

type pathParams struct {
	Path string `json:"path"`
}

// resolvePath reads a path as computer-server did: "~" is the home
// directory of the daemon's user, and so is the start of a relative path
// (computer-server ran in its user's home). ".." elements are refused, as
// everywhere in cua-spacesd.
func resolvePath(p string) (string, error) {
	if p == "" {
		return "", api.Errorf(api.KindInvalidArgument, "path is empty")
	}
	if strings.HasPrefix(p, "/") {
		return files.CleanPath("path", p)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", api.Errorf(api.KindInvalidArgument, "path %.200q is relative, and the daemon's user has no home directory to read it from; give an absolute path", p)
	}
	switch {
	case p == "~":
		p = home
	case strings.HasPrefix(p, "~/"):
		p = home + p[1:]
	default:
		p = home + "/" + p
	}
	return files.CleanPath("path", p)
}

type existsResult struct {
	Exists bool `json:"exists"`
}

// exists answers whether path names (through symlinks) an entry of type t.
func exists(p string, t api.FileType) (any, error) {
	path, err := resolvePath(p)
	if err != nil {
		return nil, err
	}
	fi, err := files.StatFollow(path)
	if api.KindOf(err) == api.KindNotFound {
		return existsResult{}, nil
	}
	if err != nil {
		return nil, err
	}
	return existsResult{Exists: fi.Type == t}, nil
}

func fileExists(_ context.Context, _ *conn, p pathParams) (any, error) {
	return exists(p.Path, api.TypeFile)
}

func directoryExists(_ context.Context, _ *conn, p pathParams) (any, error) {
	return exists(p.Path, api.TypeDir)
}

type listResult struct {
	Files []string `json:"files"`
	// Truncated says the directory holds more than files.MaxListEntries.
	Truncated bool `json:"truncated,omitempty"`
}

func listDir(ctx context.Context, _ *conn, p pathParams) (any, error) {
	path, err := resolvePath(p.Path)
	if err != nil {
		return nil, err
	}
	l, err := files.List(ctx, path, 1, true)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(l.Entries))
	for _, e := range l.Entries {
		names = append(names, e.Name)
	}
	return listResult{Files: names, Truncated: l.Truncated}, nil
}

// readRange reads n bytes of path from offset (n < 0: to the end), at most
// MaxReadBytes. An offset past the end reads nothing, as a seek and read
// past the end of a file does.
func readRange(ctx context.Context, p string, offset int64, n int64) ([]byte, error) {
	path, err := resolvePath(p)
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, api.Errorf(api.KindInvalidArgument, "offset %d is negative", offset)
	}
	content, err := files.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer content.Close()
	left := max(content.Size-offset, 0)
	if n < 0 || n > left {
		n = left
	}
	if n > MaxReadBytes {
		return nil, api.Errorf(api.KindLimitExceeded, "read %s: %d bytes is over the %d one answer carries; read it in parts with offset and length", path, n, MaxReadBytes).
			WithRetryable(false)
	}
	buf := make([]byte, n)
	if _, err := content.ReadAt(buf, offset); err != nil && err != io.EOF {
		return nil, api.Errorf(api.KindIO, "read %s: %w", path, err)
	}
	return buf, nil
}

type readTextResult struct {
	Content string `json:"content"`
}

func readText(ctx context.Context, _ *conn, p pathParams) (any, error) {
	b, err := readRange(ctx, p.Path, 0, -1)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, api.Errorf(api.KindInvalidArgument, "read_text %s: the file is not UTF-8 text; read it with read_bytes", p.Path)
	}
	return readTextResult{Content: string(b)}, nil
}

type readBytesParams struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	// Length nil reads to the end.
	Length *int64 `json:"length"`
}

type readBytesResult struct {
	ContentB64 string `json:"content_b64"`
}

func readBytes(ctx context.Context, _ *conn, p readBytesParams) (any, error) {
	n := int64(-1)
	if p.Length != nil {
		if *p.Length < 0 {
			return nil, api.Errorf(api.KindInvalidArgument, "length %d is negative", *p.Length)
		}
		n = *p.Length
	}
	b, err := readRange(ctx, p.Path, p.Offset, n)
	if err != nil {
		return nil, err
	}
	return readBytesResult{ContentB64: base64.StdEncoding.EncodeToString(b)}, nil
}

type writeTextParams struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func writeText(_ context.Context, _ *conn, p writeTextParams) (any, error) {
	return nil, write(p.Path, []byte(p.Content), false)
}

type writeBytesParams struct {
	Path       string `json:"path"`
	ContentB64 string `json:"content_b64"`
	Append     bool   `json:"append"`
}

func writeBytes(_ context.Context, _ *conn, p writeBytesParams) (any, error) {
	b, err := base64.StdEncoding.DecodeString(p.ContentB64)
	if err != nil {
		// Unpadded base64 is as clear; anything else is refused.
		var rerr error
		if b, rerr = base64.RawStdEncoding.DecodeString(p.ContentB64); rerr != nil {
			return nil, api.Errorf(api.KindInvalidArgument, "content_b64 is not base64: %v", err)
		}
	}
	return nil, write(p.Path, b, p.Append)
}

// write replaces path with b atomically, or appends b to it.
func write(p string, b []byte, appendTo bool) error {
	path, err := resolvePath(p)
	if err != nil {
		return err
	}
	if appendTo {
		_, err = files.Append(path, bytes.NewReader(b))
	} else {
		_, err = files.WriteAtomic(path, bytes.NewReader(b), files.WriteOptions{})
	}
	return err
}

type sizeResult struct {
	Size int64 `json:"size"`
}

func getFileSize(_ context.Context, _ *conn, p pathParams) (any, error) {
	path, err := resolvePath(p.Path)
	if err != nil {
		return nil, err
	}
	fi, err := files.StatFollow(path)
	if err != nil {
		return nil, err
	}
	return sizeResult{Size: fi.Size}, nil
}

// deleteFile removes a file or a symlink; a directory is delete_dir's.
func deleteFile(_ context.Context, _ *conn, p pathParams) (any, error) {
	return nil, removeEntry(p.Path, false, false)
}

// removeEntry removes what p names once it is the kind its command takes
// (dir: delete_dir; otherwise delete_file), so that neither removes what
// the other is for.
func removeEntry(p string, dir, recursive bool) error {
	path, err := resolvePath(p)
	if err != nil {
		return err
	}
	fi, err := files.Stat(path)
	if err != nil {
		return err
	}
	switch isDir := fi.Type == api.TypeDir; {
	case isDir && !dir:
		return api.Errorf(api.KindInvalidArgument, "delete_file %s: is a directory; use delete_dir", path)
	case !isDir && dir:
		return api.Errorf(api.KindInvalidArgument, "delete_dir %s: not a directory; use delete_file", path)
	}
	return files.Remove(api.RemoveRequest{Path: path, Recursive: recursive})
}

// createDir makes a directory and its parents; one that exists is fine.
func createDir(_ context.Context, _ *conn, p pathParams) (any, error) {
	path, err := resolvePath(p.Path)
	if err != nil {
		return nil, err
	}
	return nil, files.Mkdir(api.MkdirRequest{Path: path, Parents: true})
}

type deleteDirParams struct {
	Path string `json:"path"`
	// Recursive removes a directory that is not empty, with everything in
	// it (ours: computer-server removed empty directories only).
	Recursive bool `json:"recursive"`
}

func deleteDir(_ context.Context, _ *conn, p deleteDirParams) (any, error) {
	return nil, removeEntry(p.Path, true, p.Recursive)
}
