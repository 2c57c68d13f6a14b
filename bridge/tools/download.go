package tools

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
)

const (
	// downloadListDepth bounds how deep a folder download descends:
	downloadListDepth = 32 // the daemon's maximum list depth
	// maxUniqueTries bounds the "name (N).ext" search.
	maxUniqueTries = 10000
	// copyBufBytes is the buffer of one download's copy loop.
	copyBufBytes = 1 << 20
	// modeMask takes group and world write from the Space's modes: the
	// Space may be someone else's, and a umask of 022 is what a local
	// copy would get.
	modeMask fs.FileMode = 0o022
)

// localMode is the local permission of a file or folder whose mode in the
// Space is m ("0755"); ok is false when m does not parse.
func localMode(m string) (fs.FileMode, bool) {
	n, err := strconv.ParseUint(m, 8, 32)
	if err != nil {
		return 0, false
	}
	return fs.FileMode(n).Perm() &^ modeMask, true
}

// sha256Script prints a file's sha256 in the Space ("$1" is the path, never
// interpolated into the script): GNU coreutils first, then macOS's shasum.
const sha256Script = `sha256sum -- "$1" 2>/dev/null || shasum -a 256 -- "$1"`

func downloadTool() *Tool {
	return &Tool{
		Name: "download",
		Description: "Copy a file or folder from a Space to the bridge's machine. Never overwrites: an existing name becomes \"name (1).ext\". " +
			"Each file's sha256 is checked against the Space's, and it lands atomically (temp file, fsync, link). " +
			"Progress notifications are sent when the call carries a progressToken. If dest is an existing directory the source goes inside it.",
		Schema: object([]string{"space", "path", "dest"}, map[string]*jsonschema.Schema{
			"space": spaceArg(),
			"path":  nonEmpty("Absolute source path (file or folder) in the Space."),
			"dest":  nonEmpty("Local destination path on the bridge's machine."),
		}),
		TakesSpace: true,
		Requires:   []api.Feature{api.FeatureFiles},
		Errors:     []api.Kind{api.KindTransferFailed, api.KindIO, api.KindNotFound},
		Result:     "JSON {source, dest, kind, files, bytes, sha256, verified}",
		Run: func(ctx context.Context, c *Call) (*Result, error) {
			var a struct{ Path, Dest string }
			if err := decode(c, "download", &a); err != nil {
				return nil, err
			}
			src := path.Clean(a.Path)
			st, err := c.Space.Client.Stat(ctx, src)
			if err != nil {
				return nil, err
			}
			dest, err := filepath.Abs(a.Dest)
			if err != nil {
				return nil, api.Errorf(api.KindIO, "download: dest %s: %w", a.Dest, err)
			}
			if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
				dest = filepath.Join(dest, path.Base(src))
			}
			d := &downloader{c: c}
			res := TransferResult{Source: src, Verified: true}
			switch st.Type {
			case api.TypeFile:
				d.total = st.Size
				res.Kind, res.Files, res.Bytes = "file", 1, st.Size
				final, sum, verified, err := d.file(ctx, src, dest, st.Size, st.Mode, true)
				if err != nil {
					return nil, err
				}
				res.Dest, res.SHA256, res.Verified = final, sum, verified
			case api.TypeDir:
				res.Kind = "folder"
				if err := d.folder(ctx, src, dest, st.Mode, &res); err != nil {
					return nil, err
				}
			default:
				return nil, api.Errorf(api.KindInvalidArgument, "download: %s is a %s, not a file or folder", src, st.Type)
			}
			return &Result{Text: res.text("downloaded"), Structured: res}, nil
		},
	}
}

type downloader struct {
	c     *Call
	total int64
	done  int64
}

// folder downloads a directory into a temp directory next to dest, then
// renames it into place under a name that does not exist yet.
func (d *downloader) folder(ctx context.Context, src, dest, mode string, res *TransferResult) error {
	list, err := d.c.Space.Client.List(ctx, src, downloadListDepth, true)
	if err != nil {
		return err
	}
	if list.Truncated {
		return api.Errorf(api.KindTransferFailed, "download %s: the folder has more entries than the Space lists at once; download its subfolders one by one", src)
	}
	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return api.Errorf(api.KindIO, "download: create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".cua-part-*")
	if err != nil {
		return api.Errorf(api.KindIO, "download: temp folder in %s: %w", parent, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	type item struct {
		rel, mode string
		size      int64
	}
	var files, dirs []item
	prefix := strings.TrimSuffix(src, "/") + "/"
	for _, e := range list.Entries {
		if e.Path == src {
			continue
		}
		// The listing comes from the Space, which may be someone else's
		// (a shared relay Space): an entry outside src, or one whose name
		// climbs out with "..", would make the bridge write outside dest.
		rel, under := strings.CutPrefix(e.Path, prefix)
		if !under || !filepath.IsLocal(filepath.FromSlash(rel)) || path.Clean(rel) != rel {
			return api.Errorf(api.KindTransferFailed, "download %s: the Space listed %q, which is not inside the folder; nothing was kept", src, e.Path)
		}
		switch e.Type {
		case api.TypeDir:
			if err := os.MkdirAll(filepath.Join(tmp, filepath.FromSlash(rel)), 0o755); err != nil {
				return api.Errorf(api.KindIO, "download: mkdir %s: %w", rel, err)
			}
			dirs = append(dirs, item{rel, e.Mode, 0})
		case api.TypeFile:
			files = append(files, item{rel, e.Mode, e.Size})
			d.total += e.Size
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	var manifest strings.Builder
	for _, f := range files {
		local := filepath.Join(tmp, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return api.Errorf(api.KindIO, "download: mkdir %s: %w", filepath.Dir(local), err)
		}
		_, sum, verified, err := d.file(ctx, path.Join(src, f.rel), local, f.size, f.mode, false)
		if err != nil {
			return err
		}
		res.Verified = res.Verified && verified
		fmt.Fprintf(&manifest, "%s  %s\n", sum, f.rel)
		res.Files++
		res.Bytes += f.size
	}
	// Folder modes last, children before parents, so that a read-only
	// folder does not stop its own filling; the temp folder (0700) takes
	// the source folder's mode.
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].rel > dirs[j].rel })
	dirs = append(dirs, item{"", mode, 0})
	for _, dir := range dirs {
		if m, ok := localMode(dir.mode); ok {
			if err := os.Chmod(filepath.Join(tmp, filepath.FromSlash(dir.rel)), m); err != nil {
				return api.Errorf(api.KindIO, "download: chmod %s: %w", dir.rel, err)
			}
		}
	}
	final, err := renameUnique(tmp, dest)
	if err != nil {
		return err
	}
	ok = true
	res.Dest = final
	res.SHA256 = sha256Hex([]byte(manifest.String()))
	return nil
}

// file downloads one file to dest (or, with unique, to the first free
// "name (N).ext"), verifies it and returns where it landed.
func (d *downloader) file(ctx context.Context, src, dest string, size int64, mode string, unique bool) (string, string, bool, error) {
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", false, api.Errorf(api.KindIO, "download: create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".cua-part-*")
	if err != nil {
		return "", "", false, api.Errorf(api.KindIO, "download: temp file in %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	resp, err := d.c.Space.Client.Do(ctx, http.MethodGet, api.PathFileContent, url.Values{"path": {src}}, nil, "")
	if err != nil {
		return "", "", false, err
	}
	defer resp.Body.Close()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, h), copyBufBytes)
	n, err := d.copy(w, resp.Body, src)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", "", false, api.Errorf(api.KindCancelled, "download %s cancelled", src)
		}
		return "", "", false, api.Errorf(api.KindTransferFailed, "download %s: %v after %d bytes; nothing was kept", src, err, n)
	}
	if n != size {
		return "", "", false, api.Errorf(api.KindTransferFailed, "download %s: got %d bytes, the Space listed %d (did it change meanwhile?); nothing was kept", src, n, size)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	spaceSum, err := d.spaceSHA256(ctx, resp, src)
	if err != nil {
		return "", "", false, err
	}
	verified := spaceSum != ""
	if verified && !strings.EqualFold(spaceSum, sum) {
		return "", "", false, api.Errorf(api.KindTransferFailed, "download %s: sha256 mismatch (got %s, the Space has %s); nothing was kept", src, sum, spaceSum)
	}
	// The temp file is 0600; the file takes the Space's mode (an
	// executable stays one).
	if m, ok := localMode(mode); ok {
		if err := tmp.Chmod(m); err != nil {
			return "", "", false, api.Errorf(api.KindIO, "download: chmod %s: %w", tmp.Name(), err)
		}
	}
	if err := tmp.Sync(); err != nil {
		return "", "", false, api.Errorf(api.KindIO, "download: fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return "", "", false, api.Errorf(api.KindIO, "download: close %s: %w", tmp.Name(), err)
	}
	final := dest
	if unique {
		if final, err = linkUnique(tmp.Name(), dest); err != nil {
			return "", "", false, err
		}
		os.Remove(tmp.Name())
	} else if err := os.Rename(tmp.Name(), dest); err != nil {
		return "", "", false, api.Errorf(api.KindIO, "download: rename to %s: %w", dest, err)
	}
	ok = true
	return final, sum, verified, nil
}

func (d *downloader) copy(w io.Writer, r io.Reader, name string) (int64, error) {
	buf := make([]byte, copyBufBytes)
	var n int64
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			if _, err := w.Write(buf[:k]); err != nil {
				return n, fmt.Errorf("write local file: %w", err)
			}
			n += int64(k)
			d.done += int64(k)
			d.c.Progress(float64(d.done), float64(d.total), "download "+name)
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// spaceSHA256 asks the Space for the file's sha256: from the answer's
// trailer (the daemon hashes what it sends), else by running sha256sum there. "" means the
// Space cannot tell (no shell): the size check is then all there is.
func (d *downloader) spaceSHA256(ctx context.Context, resp *http.Response, src string) (string, error) {
	if s := resp.Trailer.Get(api.HeaderSHA256); len(s) == 64 {
		return s, nil
	}
	if ok, _ := d.c.Space.Caps.Supports(api.FeatureShell); !ok {
		return "", nil
	}
	res, err := d.c.Space.Client.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"/bin/sh", "-c", sha256Script, "sh", src}}})
	if err != nil {
		return "", err
	}
	f := strings.Fields(res.Stdout)
	if res.ExitCode != 0 || len(f) == 0 || len(f[0]) != 64 {
		return "", nil
	}
	return f[0], nil
}

// uniqueName returns the i-th candidate for p: p itself, then "name (i).ext".
func uniqueName(p string, i int) string {
	if i == 0 {
		return p
	}
	dir, base := filepath.Split(p)
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if stem == "" { // ".bashrc": the dot is the name, not an extension
		stem, ext = base, ""
	}
	return filepath.Join(dir, fmt.Sprintf("%s (%d)%s", stem, i, ext))
}

// linkUnique hard-links tmp to the first free candidate name: link fails if
// the name exists, so even a file created meanwhile is never overwritten.
func linkUnique(tmp, dest string) (string, error) {
	for i := 0; i < maxUniqueTries; i++ {
		cand := uniqueName(dest, i)
		err := os.Link(tmp, cand)
		if err == nil {
			return cand, nil
		}
		if !os.IsExist(err) {
			return "", api.Errorf(api.KindIO, "download: place %s: %w", cand, err)
		}
	}
	return "", api.Errorf(api.KindIO, "download: no free name for %s after %d tries", dest, maxUniqueTries)
}

// renameUnique renames a finished temp folder to the first name not taken.
func renameUnique(tmp, dest string) (string, error) {
	for i := 0; i < maxUniqueTries; i++ {
		cand := uniqueName(dest, i)
		if _, err := os.Lstat(cand); err == nil {
			continue
		} else if !isNotExist(err) {
			return "", api.Errorf(api.KindIO, "download: check %s: %w", cand, err)
		}
		if err := os.Rename(tmp, cand); err != nil {
			return "", api.Errorf(api.KindIO, "download: place %s: %w", cand, err)
		}
		return cand, nil
	}
	return "", api.Errorf(api.KindIO, "download: no free name for %s after %d tries", dest, maxUniqueTries)
}
