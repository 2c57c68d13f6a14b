package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
)

// Transfer bounds.
const (
	// defaultChunkBytes is used when the Space does not state its chunk size.
	defaultChunkBytes = 8 << 20
	// abortTimeout bounds the clean-up call after a cancelled upload: the
	// caller's context is gone, the Space should still drop the partial data.
	abortTimeout = 10 * time.Second
)

// TransferResult is the structured answer of upload and download.
type TransferResult struct {
	Source string `json:"source"`
	Dest   string `json:"dest"`
	Kind   string `json:"kind"` // "file" or "folder"
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	// SHA256 is the file's sha256; for a folder, the sha256 of its manifest
	// (one "<sha256>  <relative path>\n" line per file, sorted by path).
	SHA256   string `json:"sha256"`
	Verified bool   `json:"verified"`
}

func (r TransferResult) text(verb string) string {
	v := "verified in Space"
	if !r.Verified {
		v = "size checked, sha256 not verifiable in this Space"
	}
	return fmt.Sprintf("%s %s %s -> %s (%d files, %d bytes, sha256 %s, %s)", verb, r.Kind, r.Source, r.Dest, r.Files, r.Bytes, r.SHA256, v)
}

func uploadTool() *Tool {
	return &Tool{
		Name: "upload",
		Description: "Copy a local file or folder (on the bridge's machine) into a Space: chunked, resumable, each file's sha256 verified " +
			"in the Space before it lands atomically. Progress notifications are sent when the call carries a progressToken. " +
			"If dest is an existing directory the source goes inside it.",
		Schema: object([]string{"space", "path", "dest"}, map[string]*jsonschema.Schema{
			"space":     spaceArg(),
			"path":      nonEmpty("Local source path (file or folder) on the bridge's machine."),
			"dest":      nonEmpty("Absolute destination path in the Space."),
			"overwrite": boolean("Replace existing files at the destination.", true),
		}),
		TakesSpace: true,
		Requires:   []api.Feature{api.FeatureFiles},
		Errors:     []api.Kind{api.KindTransferFailed, api.KindIO, api.KindNotFound},
		Result:     "JSON {source, dest, kind, files, bytes, sha256, verified}",
		Run: func(ctx context.Context, c *Call) (*Result, error) {
			var a struct {
				Path, Dest string
				Overwrite  *bool
			}
			if err := decode(c, "upload", &a); err != nil {
				return nil, err
			}
			overwrite := a.Overwrite == nil || *a.Overwrite
			src, err := filepath.Abs(a.Path)
			if err != nil {
				return nil, api.Errorf(api.KindIO, "upload: source %s: %w", a.Path, err)
			}
			fi, err := os.Stat(src)
			if err != nil {
				return nil, api.Errorf(api.KindIO, "upload: source %s: %w", src, err)
			}
			if !fi.IsDir() && !fi.Mode().IsRegular() {
				// A device or FIFO: /dev/zero would be hashed forever (no
				// cancel stops that local read) and a FIFO blocks its open.
				return nil, api.Errorf(api.KindInvalidArgument, "upload: source %s is a %s, not a regular file or folder", src, fi.Mode().Type())
			}
			if !strings.HasPrefix(a.Dest, "/") {
				return nil, api.Errorf(api.KindInvalidArgument, "upload: dest %q must be an absolute path in the Space", a.Dest)
			}
			dest := path.Clean(a.Dest)
			if st, err := c.Space.Client.Stat(ctx, dest); err == nil && st.Type == api.TypeDir {
				dest = path.Join(dest, filepath.Base(src))
			} else if err != nil && api.KindOf(err) != api.KindNotFound {
				return nil, err
			}
			up := &uploader{c: c, chunk: chunkBytes(c.Space.Caps), overwrite: overwrite}
			res := TransferResult{Source: src, Dest: dest, Verified: true}
			if !fi.IsDir() {
				res.Kind, res.Files, res.Bytes = "file", 1, fi.Size()
				up.total = fi.Size()
				if res.SHA256, err = up.file(ctx, src, dest, fi); err != nil {
					return nil, err
				}
				return &Result{Text: res.text("uploaded"), Structured: res}, nil
			}
			res.Kind = "folder"
			files, dirs, err := walkLocal(src)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				up.total += f.info.Size()
			}
			for _, d := range append([]string{""}, dirs...) {
				if err := c.Space.Client.Mkdir(ctx, api.MkdirRequest{Path: path.Join(dest, d), Parents: true}); err != nil {
					return nil, err
				}
			}
			var manifest strings.Builder
			for _, f := range files {
				sum, err := up.file(ctx, filepath.Join(src, filepath.FromSlash(f.rel)), path.Join(dest, f.rel), f.info)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(&manifest, "%s  %s\n", sum, f.rel)
				res.Files++
				res.Bytes += f.info.Size()
			}
			res.SHA256 = sha256Hex([]byte(manifest.String()))
			return &Result{Text: res.text("uploaded"), Structured: res}, nil
		},
	}
}

func chunkBytes(caps *api.Capabilities) int64 {
	if caps != nil && caps.Limits.UploadChunkBytes > 0 {
		return caps.Limits.UploadChunkBytes
	}
	return defaultChunkBytes
}

type localFile struct {
	rel  string // slash-separated, relative to the folder
	info fs.FileInfo
}

// walkLocal lists a folder's regular files and directories, sorted. Symlinks
// and special files are refused rather than silently skipped.
func walkLocal(root string) ([]localFile, []string, error) {
	var files []localFile
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			dirs = append(dirs, rel)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, localFile{rel: rel, info: info})
		default:
			return fmt.Errorf("%s is not a regular file or directory (%s)", p, d.Type())
		}
		return nil
	})
	if err != nil {
		return nil, nil, api.Errorf(api.KindIO, "upload: walk %s: %w", root, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, dirs, nil
}

type uploader struct {
	c         *Call
	chunk     int64
	overwrite bool
	total     int64
	done      int64
}

// file uploads one local file and returns its sha256, verified by the Space.
func (u *uploader) file(ctx context.Context, local, remote string, fi fs.FileInfo) (string, error) {
	f, err := os.Open(local)
	if err != nil {
		return "", api.Errorf(api.KindIO, "upload: open %s: %w", local, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", api.Errorf(api.KindIO, "upload: read %s: %w", local, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	cl := u.c.Space.Client
	st, err := cl.BeginUpload(ctx, api.UploadRequest{
		Path: remote, Size: fi.Size(), SHA256: sum, Mode: api.FileModeString(fi.Mode()), Overwrite: u.overwrite,
	})
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok && ctx.Err() != nil {
			// Cancelled: drop the partial data in the Space. Other failures
			// keep it, so the same upload resumes from its offset.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			_ = cl.AbortUpload(actx, st.ID)
			cancel()
		}
	}()
	base := u.done
	off := st.Offset
	u.report(base+off, remote)
	for off < fi.Size() {
		n := min(u.chunk, fi.Size()-off)
		sec := io.NewSectionReader(f, off, n)
		next, err := cl.PutChunk(ctx, st.ID, off, sec, n)
		if err != nil {
			return "", err
		}
		if next.Offset <= off {
			return "", api.Errorf(api.KindTransferFailed, "upload %s: the Space did not advance past offset %d", remote, off)
		}
		off = next.Offset
		u.report(base+off, remote)
	}
	res, err := cl.CommitUpload(ctx, st.ID)
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(res.SHA256, sum) || res.Size != fi.Size() {
		return "", api.Errorf(api.KindTransferFailed, "upload %s: the Space verified sha256 %s (%d bytes), want %s (%d bytes); nothing was written",
			remote, res.SHA256, res.Size, sum, fi.Size())
	}
	ok = true
	u.done = base + fi.Size()
	return sum, nil
}

func (u *uploader) report(done int64, name string) {
	u.c.Progress(float64(done), float64(u.total), "upload "+name)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// isNotExist reports a local not-exist error.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
