package files_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

func TestCleanPath(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		kind     api.Kind
	}{
		{"/a/b", "/a/b", ""},
		{"/a//b/./c/", "/a/b/c", ""},
		{"/", "/", ""},
		{"", "", api.KindInvalidArgument},
		{"a/b", "", api.KindInvalidArgument},
		{"./a", "", api.KindInvalidArgument},
		{"/a/../b", "", api.KindInvalidArgument},
		{"/a/b\x00c", "", api.KindInvalidArgument},
		{"/" + strings.Repeat("a", files.MaxPathBytes), "", api.KindInvalidArgument},
	} {
		got, err := files.CleanPath("path", tc.in)
		if api.KindOf(err) != tc.kind || got != tc.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q, kind %q", tc.in, got, err, tc.want, tc.kind)
		}
	}
}

func names(res api.ListResult, root string) []string {
	var out []string
	for _, e := range res.Entries {
		rel, _ := filepath.Rel(root, e.Path)
		out = append(out, rel)
	}
	return out
}

func TestListDepthHidden(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "a")
	writeFile(t, filepath.Join(root, ".hidden"), "h")
	writeFile(t, filepath.Join(root, "d", "b.txt"), "bb")
	writeFile(t, filepath.Join(root, "d", "e", "c.txt"), "ccc")
	if err := os.Symlink("/nonexistent", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		depth  int
		hidden bool
		want   string
	}{
		{1, false, "a.txt d link"},
		{1, true, ".hidden a.txt d link"},
		{2, false, "a.txt d d/b.txt d/e link"},
		{3, false, "a.txt d d/b.txt d/e d/e/c.txt link"},
	} {
		res, err := files.List(t.Context(), root, tc.depth, tc.hidden)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(names(res, root), " "); got != tc.want || res.Truncated {
			t.Errorf("depth %d hidden %v: %q truncated=%v; want %q", tc.depth, tc.hidden, got, res.Truncated, tc.want)
		}
	}
	res, _ := files.List(t.Context(), root, 1, false)
	for _, e := range res.Entries {
		if e.Name == "link" && (e.Type != api.TypeSymlink || e.Target != "/nonexistent") {
			t.Errorf("symlink entry %+v", e)
		}
		if e.Name == "a.txt" && (e.Type != api.TypeFile || e.Size != 1 || e.Mode != "0644") {
			t.Errorf("file entry %+v", e)
		}
	}
	for _, tc := range []struct {
		path  string
		depth int
		kind  api.Kind
	}{
		{filepath.Join(root, "nope"), 1, api.KindNotFound},
		{filepath.Join(root, "a.txt"), 1, api.KindInvalidArgument},
		{"relative", 1, api.KindInvalidArgument},
		{root, 0, api.KindInvalidArgument},
		{root, files.MaxListDepth + 1, api.KindInvalidArgument},
	} {
		if _, err := files.List(t.Context(), tc.path, tc.depth, false); api.KindOf(err) != tc.kind {
			t.Errorf("List(%s, %d): %v; want kind %s", tc.path, tc.depth, err, tc.kind)
		}
	}
}

func TestListTruncates(t *testing.T) {
	root := t.TempDir()
	for i := range files.MaxListEntries + 5 {
		f, err := os.Create(filepath.Join(root, "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+hex.EncodeToString([]byte{byte(i >> 8), byte(i)})))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	res, err := files.List(t.Context(), root, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Entries) != files.MaxListEntries {
		t.Fatalf("truncated=%v entries=%d; want true, %d", res.Truncated, len(res.Entries), files.MaxListEntries)
	}
}

func TestMkdirMoveRemove(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	writeFile(t, a, "A")
	writeFile(t, b, "B")
	writeFile(t, filepath.Join(root, "full", "x"), "x")
	steps := []struct {
		name string
		do   func() error
		kind api.Kind
	}{
		{"mkdir without parents", func() error { return files.Mkdir(api.MkdirRequest{Path: filepath.Join(root, "p", "q")}) }, api.KindNotFound},
		{"mkdir with parents and mode", func() error {
			return files.Mkdir(api.MkdirRequest{Path: filepath.Join(root, "p", "q"), Parents: true, Mode: "0700"})
		}, ""},
		{"mkdir existing", func() error { return files.Mkdir(api.MkdirRequest{Path: filepath.Join(root, "p")}) }, api.KindPreconditionFailed},
		{"mkdir existing with parents", func() error { return files.Mkdir(api.MkdirRequest{Path: filepath.Join(root, "p"), Parents: true}) }, ""},
		{"mkdir bad mode", func() error { return files.Mkdir(api.MkdirRequest{Path: filepath.Join(root, "m"), Mode: "999"}) }, api.KindInvalidArgument},
		{"move onto existing", func() error { return files.Move(api.MoveRequest{From: a, To: b}) }, api.KindPreconditionFailed},
		{"move missing", func() error { return files.Move(api.MoveRequest{From: a + "zz", To: b + "zz"}) }, api.KindNotFound},
		{"move into itself", func() error { return files.Move(api.MoveRequest{From: root + "/p", To: root + "/p/q/r"}) }, api.KindInvalidArgument},
		{"move root", func() error { return files.Move(api.MoveRequest{From: "/", To: root + "/r"}) }, api.KindInvalidArgument},
		{"move with overwrite", func() error { return files.Move(api.MoveRequest{From: a, To: b, Overwrite: true}) }, ""},
		{"remove non-empty", func() error { return files.Remove(api.RemoveRequest{Path: filepath.Join(root, "full")}) }, api.KindPreconditionFailed},
		{"remove root", func() error { return files.Remove(api.RemoveRequest{Path: "/", Recursive: true}) }, api.KindInvalidArgument},
		{"remove root spelled oddly", func() error { return files.Remove(api.RemoveRequest{Path: "//./", Recursive: true}) }, api.KindInvalidArgument},
		{"remove missing", func() error { return files.Remove(api.RemoveRequest{Path: a}) }, api.KindNotFound},
		{"remove recursive", func() error {
			return files.Remove(api.RemoveRequest{Path: filepath.Join(root, "full"), Recursive: true})
		}, ""},
		{"remove file", func() error { return files.Remove(api.RemoveRequest{Path: b}) }, ""},
	}
	for _, s := range steps {
		if err := s.do(); api.KindOf(err) != s.kind {
			t.Fatalf("%s: %v; want kind %q", s.name, err, s.kind)
		}
	}
	fi, err := os.Stat(filepath.Join(root, "p", "q"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("mkdir mode: %v %v", fi, err)
	}
	if got := strings.Join(entries(t, root), " "); got != "p" {
		t.Errorf("left %q; want only p", got)
	}
}

func TestWriteAtomicKeepsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := files.WriteAtomic(p, strings.NewReader("new content"), files.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("new content"))
	if res.Size != 11 || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("result %+v", res)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want the old 0600", fi.Mode())
	}
	m := os.FileMode(0o640)
	if _, err := files.WriteAtomic(p, strings.NewReader("x"), files.WriteOptions{Mode: &m}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v; want the given 0640", fi.Mode())
	}
	if _, err := files.WriteAtomic(filepath.Join(dir, "nodir", "f"), strings.NewReader("x"), files.WriteOptions{}); api.KindOf(err) != api.KindNotFound {
		t.Errorf("write into a missing directory: %v", err)
	}
	if _, err := files.WriteAtomic(dir, strings.NewReader("x"), files.WriteOptions{}); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("write over a directory: %v", err)
	}
	if got := strings.Join(entries(t, dir), " "); got != "f" {
		t.Errorf("left %q; want only f", got)
	}
}

// A write bigger than the free space answers kind io with a clear message,
// leaves the old file intact and no temp file behind.
func TestWriteDiskFull(t *testing.T) {
	dir := smallTmpfs(t, "1m")
	p := filepath.Join(dir, "f")
	writeFile(t, p, "previous")
	_, err := files.WriteAtomic(p, bytes.NewReader(make([]byte, 2<<20)), files.WriteOptions{})
	if api.KindOf(err) != api.KindIO || !strings.Contains(err.Error(), "disk full while writing "+p+"; nothing was changed") {
		t.Fatalf("err = %v; want kind io, disk full", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "previous" {
		t.Errorf("old file now %q", b)
	}
	if got := strings.Join(entries(t, dir), " "); got != "f" {
		t.Errorf("left %q; want only f", got)
	}
}

func TestUploadDiskFull(t *testing.T) {
	dir := smallTmpfs(t, "1m")
	p := filepath.Join(dir, "f")
	writeFile(t, p, "previous")
	us := files.NewUploads(files.UploadOptions{})
	defer us.Close()
	data := make([]byte, 2<<20)
	sum := sha256.Sum256(data)
	st, err := us.Begin(api.UploadRequest{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = us.Put(t.Context(), st.ID, 0, int64(len(data)), bytes.NewReader(data), nil)
	if api.KindOf(err) != api.KindIO || !strings.Contains(err.Error(), "disk full while uploading "+p) {
		t.Fatalf("err = %v; want kind io, disk full", err)
	}
	if _, err := us.Status(st.ID); api.KindOf(err) != api.KindNotFound {
		t.Errorf("upload still known after disk full: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "previous" {
		t.Errorf("old file now %q", b)
	}
	if got := strings.Join(entries(t, dir), " "); got != "f" {
		t.Errorf("left %q; want only f", got)
	}
}

// An upload adopted from its partial file (a daemon restart) re-hashes what
// is there and verifies.
func TestUploadAdoptsPartialAfterRestart(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.bin")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	sum := sha256.Sum256(data)
	req := api.UploadRequest{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	us := files.NewUploads(files.UploadOptions{})
	st, err := us.Begin(req)
	if err != nil {
		t.Fatal(err)
	}
	half := int64(len(data) / 2)
	if st, err = us.Put(t.Context(), st.ID, 0, half, bytes.NewReader(data[:half]), nil); err != nil || st.Offset != half {
		t.Fatalf("put: %+v %v", st, err)
	}
	us.Close()

	us2 := files.NewUploads(files.UploadOptions{})
	defer us2.Close()
	st2, err := us2.Begin(req)
	if err != nil || st2.ID != st.ID || st2.Offset != half {
		t.Fatalf("resume: %+v %v; want id %s at %d", st2, err, st.ID, half)
	}
	if _, err := us2.Put(t.Context(), st2.ID, 0, -1, bytes.NewReader(data), nil); api.KindOf(err) != api.KindInvalidArgument ||
		!strings.Contains(err.Error(), "send from offset 524288") {
		t.Fatalf("put at a wrong offset: %v", err)
	}
	if _, err := us2.Put(t.Context(), st2.ID, half, -1, bytes.NewReader(data[half:]), nil); err != nil {
		t.Fatal(err)
	}
	res, err := us2.Commit(t.Context(), st2.ID)
	if err != nil || res.SHA256 != req.SHA256 {
		t.Fatalf("commit: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, data) {
		t.Error("content differs")
	}
	if got := strings.Join(entries(t, dir), " "); got != "big.bin" {
		t.Errorf("left %q", got)
	}
}

func TestUploadExpires(t *testing.T) {
	dir := t.TempDir()
	us := files.NewUploads(files.UploadOptions{IdleTimeout: 20 * time.Millisecond})
	defer us.Close()
	sum := sha256.Sum256(nil)
	st, err := us.Begin(api.UploadRequest{Path: filepath.Join(dir, "f"), Size: 10, SHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		t.Fatal(err)
	}
	// Poll the directory, not the upload: asking for its status keeps it alive.
	deadline := time.Now().Add(10 * time.Second)
	for len(entries(t, dir)) != 0 && time.Now().Before(deadline) {
		<-time.After(5 * time.Millisecond)
	}
	if len(entries(t, dir)) != 0 {
		t.Fatalf("partial left: %v", entries(t, dir))
	}
	if _, err := us.Status(st.ID); api.KindOf(err) != api.KindNotFound {
		t.Errorf("expired upload still known: %v", err)
	}
}
