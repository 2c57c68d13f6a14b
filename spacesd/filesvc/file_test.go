package filesvc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"go.uber.org/goleak"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		n = append(n, e.Name())
	}
	return strings.Join(n, " ")
}

// rawGet does a GET with the daemon's token and extra headers.
func rawGet(t *testing.T, d *spacesdtest.Daemon, path string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, d.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func errKind(t *testing.T, body []byte) api.Kind {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		t.Fatalf("not an error envelope: %q", body)
	}
	return env.Error.Kind
}

func TestFileReadRanges(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c, ctx := d.Client, t.Context()
	p := filepath.Join(t.TempDir(), "f.txt")
	content := []byte("0123456789abcdefghij")
	res, err := c.Write(ctx, p, bytes.NewReader(content), int64(len(content)), "")
	if err != nil || res.Size != 20 || res.SHA256 != sha(content) {
		t.Fatalf("write: %+v %v", res, err)
	}
	// Through the Go client (offset/length become a Range).
	for _, tc := range []struct {
		off, n int64
		want   string
	}{
		{0, -1, string(content)}, {5, 3, "567"}, {18, 10, "ij"}, {3, 0, ""}, {19, -1, "j"},
	} {
		rc, size, err := c.Read(ctx, p, tc.off, tc.n)
		if err != nil {
			t.Fatalf("read %d+%d: %v", tc.off, tc.n, err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != tc.want || size != 20 {
			t.Errorf("read %d+%d = %q (size %d); want %q", tc.off, tc.n, b, size, tc.want)
		}
	}
	if _, _, err := c.Read(ctx, p, 20, -1); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("read past the end: %v; want invalid_argument", err)
	}
	q := "/v1/files/content?path=" + p
	for _, tc := range []struct {
		name   string
		query  string
		rng    string
		status int
		body   string
		kind   api.Kind
	}{
		{"whole", "", "", 200, string(content), ""},
		{"range", "", "bytes=2-4", 206, "234", ""},
		{"open range", "", "bytes=15-", 206, "fghij", ""},
		{"suffix", "", "bytes=-3", 206, "hij", ""},
		{"suffix longer than file", "", "bytes=-50", 206, string(content), ""},
		{"end past the file", "", "bytes=10-99", 206, "abcdefghij", ""},
		{"start past the file", "", "bytes=20-", 416, "", api.KindInvalidArgument},
		{"zero suffix", "", "bytes=-0", 416, "", api.KindInvalidArgument},
		{"two ranges", "", "bytes=0-1,3-4", 400, "", api.KindInvalidArgument},
		{"bad unit", "", "lines=1-2", 400, "", api.KindInvalidArgument},
		{"query window", "&offset=4&length=2", "", 200, "45", ""},
		{"query offset only", "&offset=17", "", 200, "hij", ""},
		{"query past the end", "&offset=20", "", 416, "", api.KindInvalidArgument},
		{"query bad", "&offset=-1", "", 400, "", api.KindInvalidArgument},
		{"query and range", "&offset=1", "bytes=1-2", 400, "", api.KindInvalidArgument},
	} {
		hdr := map[string]string{}
		if tc.rng != "" {
			hdr["Range"] = tc.rng
		}
		resp, b := rawGet(t, d, q+tc.query, hdr)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d; want %d (%s)", tc.name, resp.StatusCode, tc.status, b)
			continue
		}
		if tc.kind != "" {
			if k := errKind(t, b); k != tc.kind {
				t.Errorf("%s: kind %s; want %s", tc.name, k, tc.kind)
			}
			continue
		}
		if string(b) != tc.body || resp.Header.Get(api.HeaderFileSize) != "20" {
			t.Errorf("%s: %q size %q; want %q", tc.name, b, resp.Header.Get(api.HeaderFileSize), tc.body)
		}
	}
	resp, _ := rawGet(t, d, q, map[string]string{"Range": "bytes=-3"})
	if cr := resp.Header.Get("Content-Range"); cr != "bytes 17-19/20" {
		t.Errorf("Content-Range %q", cr)
	}
	// An empty file answers its empty content, Range or not.
	empty := filepath.Join(filepath.Dir(p), "empty")
	os.WriteFile(empty, nil, 0o644)
	if resp, b := rawGet(t, d, "/v1/files/content?path="+empty, map[string]string{"Range": "bytes=0-"}); resp.StatusCode != 200 || len(b) != 0 {
		t.Errorf("empty file: %d %q", resp.StatusCode, b)
	}
}

func TestFileOpsOverHTTP(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c, ctx := d.Client, t.Context()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Mkdir(ctx, api.MkdirRequest{Path: root + "/a/b", Parents: true}))
	_, err := c.Write(ctx, root+"/a/b/f", strings.NewReader("x"), 1, "0600")
	must(err)
	_, err = c.Write(ctx, root+"/a/.h", strings.NewReader("h"), 1, "")
	must(err)
	fi, err := c.Stat(ctx, root+"/a/b/f")
	if err != nil || fi.Type != api.TypeFile || fi.Mode != "0600" || fi.Size != 1 {
		t.Fatalf("stat: %+v %v", fi, err)
	}
	ls, err := c.List(ctx, root, 3, false)
	if err != nil || len(ls.Entries) != 3 || ls.Truncated {
		t.Fatalf("list depth 3: %+v %v", ls, err)
	}
	if ls, _ := c.List(ctx, root+"/a", 1, true); len(ls.Entries) != 2 {
		t.Errorf("list hidden: %+v", ls)
	}
	for _, tc := range []struct {
		name string
		err  error
		kind api.Kind
	}{
		{"stat relative", func() error { _, err := c.Stat(ctx, "a/b"); return err }(), api.KindInvalidArgument},
		{"stat missing", func() error { _, err := c.Stat(ctx, root+"/zz"); return err }(), api.KindNotFound},
		{"list bad depth", func() error { _, err := c.List(ctx, root, 0, false); return err }(), api.KindInvalidArgument},
		{"mkdir existing", c.Mkdir(ctx, api.MkdirRequest{Path: root + "/a"}), api.KindPreconditionFailed},
		{"move onto existing", c.Move(ctx, api.MoveRequest{From: root + "/a/.h", To: root + "/a/b/f"}), api.KindPreconditionFailed},
		{"remove non-empty", c.Remove(ctx, api.RemoveRequest{Path: root + "/a"}), api.KindPreconditionFailed},
		{"remove root", c.Remove(ctx, api.RemoveRequest{Path: "/", Recursive: true}), api.KindInvalidArgument},
		{"move overwrite", c.Move(ctx, api.MoveRequest{From: root + "/a/.h", To: root + "/a/b/f", Overwrite: true}), ""},
		{"remove recursive", c.Remove(ctx, api.RemoveRequest{Path: root + "/a", Recursive: true}), ""},
	} {
		if api.KindOf(tc.err) != tc.kind {
			t.Errorf("%s: %v; want kind %q", tc.name, tc.err, tc.kind)
		}
	}
	if n := dirNames(t, root); n != "" {
		t.Errorf("left %q", n)
	}
	// Unknown JSON fields are refused, not ignored.
	resp, err := c.Do(ctx, http.MethodPost, api.PathFileMkdir, nil, strings.NewReader(`{"path":"/x","parent":true}`), "application/json")
	if api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("unknown field: %v %v", resp, err)
	}
}

// upload sends data in chunks of chunk bytes from offset, stopping after
// stopAfter chunks (< 0: all).
func upload(ctx context.Context, c *client.Client, id string, data []byte, from int64, chunk int, stopAfter int) (*api.UploadState, error) {
	st := &api.UploadState{Offset: from}
	for i := 0; st.Offset < int64(len(data)) && i != stopAfter; i++ {
		end := min(st.Offset+int64(chunk), int64(len(data)))
		var err error
		st, err = c.PutChunk(ctx, id, st.Offset, bytes.NewReader(data[st.Offset:end]), end-st.Offset)
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

func TestUploadWrongSHA256LeavesNothing(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c, ctx := d.Client, t.Context()
	dir := t.TempDir()
	data := bytes.Repeat([]byte("x"), 300_000)
	st, err := c.BeginUpload(ctx, api.UploadRequest{Path: dir + "/f", Size: int64(len(data)), SHA256: sha([]byte("other"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := upload(ctx, c, st.ID, data, 0, 100_000, -1); err != nil {
		t.Fatal(err)
	}
	_, err = c.CommitUpload(ctx, st.ID)
	if api.KindOf(err) != api.KindTransferFailed || !strings.Contains(err.Error(), "sha256 mismatch (got "+sha(data)) ||
		!strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("commit: %v; want transfer_failed naming both hashes", err)
	}
	if n := dirNames(t, dir); n != "" {
		t.Errorf("left %q; want nothing", n)
	}
	if _, err := c.UploadStatus(ctx, st.ID); api.KindOf(err) != api.KindNotFound {
		t.Errorf("status after a failed commit: %v", err)
	}
}

func TestUploadResumes(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c, ctx := d.Client, t.Context()
	dir := t.TempDir()
	p := dir + "/big.bin"
	data := make([]byte, 3<<20+12345)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	req := api.UploadRequest{Path: p, Size: int64(len(data)), SHA256: sha(data), Mode: "0640"}
	st, err := c.BeginUpload(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// The client stops after half the chunks ...
	const chunk = 256 << 10
	half, err := upload(ctx, c, st.ID, data, 0, chunk, len(data)/chunk/2)
	if err != nil || half.Offset == 0 {
		t.Fatalf("first half: %+v %v", half, err)
	}
	// ... restarts, announces the same upload again and gets its offset back.
	c2, _ := client.New(d.URL, d.Token)
	again, err := c2.BeginUpload(ctx, req)
	if err != nil || again.ID != st.ID || again.Offset != half.Offset {
		t.Fatalf("re-announce: %+v %v; want id %s at %d", again, err, st.ID, half.Offset)
	}
	// A chunk at the wrong offset names the right one.
	if _, err := c2.PutChunk(ctx, st.ID, 0, bytes.NewReader(data[:10]), 10); api.KindOf(err) != api.KindInvalidArgument ||
		!strings.Contains(err.Error(), "send from offset") {
		t.Fatalf("wrong offset: %v", err)
	}
	// The connection is cut in the middle of a chunk: what arrived stays.
	cut := &cutReader{r: bytes.NewReader(data[again.Offset:]), left: 700_000}
	if _, err := c2.PutChunk(ctx, st.ID, again.Offset, cut, int64(len(data))-again.Offset); err == nil {
		t.Fatal("a cut chunk succeeded")
	}
	// Resume from the offset the daemon reports; the cut chunk's handler
	// may still be finishing, and then the offset it names is the answer.
	var done *api.UploadState
	for attempt := 0; attempt < 10; attempt++ {
		cur, err := c2.UploadStatus(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done, err = upload(ctx, c2, st.ID, data, cur.Offset, chunk, -1); err == nil {
			break
		} else if api.KindOf(err) != api.KindInvalidArgument {
			t.Fatal(err)
		}
	}
	if done == nil || done.Offset != int64(len(data)) {
		t.Fatalf("resume ended at %+v", done)
	}
	res, err := c2.CommitUpload(ctx, st.ID)
	if err != nil || res.SHA256 != req.SHA256 || res.Size != int64(len(data)) {
		t.Fatalf("commit: %+v %v", res, err)
	}
	got, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if !bytes.Equal(got, data) || fi.Mode().Perm() != 0o640 {
		t.Errorf("content equal=%v mode=%v", bytes.Equal(got, data), fi.Mode())
	}
	if n := dirNames(t, dir); n != "big.bin" {
		t.Errorf("left %q", n)
	}
	// Without overwrite, the upload of an existing path is refused.
	if _, err := c.BeginUpload(ctx, req); api.KindOf(err) != api.KindPreconditionFailed {
		t.Errorf("upload over an existing file: %v", err)
	}
	// Abort drops an upload and its partial file.
	req.Overwrite = true
	st, err = c.BeginUpload(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AbortUpload(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	if n := dirNames(t, dir); n != "big.bin" {
		t.Errorf("left after abort %q", n)
	}
}

// cutReader fails after left bytes, as a connection cut would.
type cutReader struct {
	r    io.Reader
	left int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("connection cut")
	}
	p = p[:min(len(p), c.left)]
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

// mountTmpfs mounts a small tmpfs; it fails in CI when that is impossible.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		msg := "cannot mount a tmpfs: " + err.Error() + ": " + string(out)
		testenv.Missing(t, "%s", msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v %s", err, out)
		}
	})
	return dir
}

func TestFileDiskFull(t *testing.T) {
	dir := mountTmpfs(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c, ctx := d.Client, t.Context()
	p := dir + "/f"
	if _, err := c.Write(ctx, p, strings.NewReader("previous"), 8, ""); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 2<<20)
	_, err := c.Write(ctx, p, bytes.NewReader(big), int64(len(big)), "")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Kind != api.KindIO || ae.Message != "disk full while writing "+p+"; nothing was changed" {
		t.Fatalf("write to a full disk: %v", err)
	}
	if ae.Status != http.StatusInsufficientStorage {
		t.Errorf("full disk answered HTTP %d, want 507", ae.Status)
	}
	// The upload fills the disk in its chunk: dropped, nothing changed.
	st, err := c.BeginUpload(ctx, api.UploadRequest{Path: p, Size: int64(len(big)), SHA256: sha(big), Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutChunk(ctx, st.ID, 0, bytes.NewReader(big), int64(len(big))); api.KindOf(err) != api.KindIO ||
		!strings.Contains(err.Error(), "disk full while uploading "+p) {
		t.Fatalf("upload chunk to a full disk: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "previous" {
		t.Errorf("old file now %q", b)
	}
	if n := dirNames(t, dir); n != "f" {
		t.Errorf("left %q; want only f", n)
	}
}

// Not parallel: goleak must see only this test's goroutines. The check is
// registered first so it runs after the daemon's own cleanup.
func TestFileWatchOverWebSocket(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c := d.Client
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, lim := caps.Supports(api.FeatureFSWatch); !ok {
		t.Fatalf("fs_watch unsupported: %s", lim)
	}
	if caps.Limits.UploadChunkBytes <= 0 {
		t.Errorf("limits.upload_chunk_bytes = %d", caps.Limits.UploadChunkBytes)
	}
	if _, err := c.Watch(ctx, "/no/such/dir", false); api.KindOf(err) != api.KindNotFound {
		t.Errorf("watch of a missing dir: %v", err)
	}
	root := t.TempDir()
	w, err := c.Watch(ctx, root, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	expect := func(op, path string) {
		t.Helper()
		for {
			ev, err := w.Next()
			if err != nil {
				t.Fatalf("waiting for %s %s: %v", op, path, err)
			}
			if ev.Op == op && ev.Path == path {
				return
			}
		}
	}
	f := root + "/f"
	os.WriteFile(f, []byte("x"), 0o644)
	expect("create", f)
	expect("write", f)
	os.Mkdir(root+"/sub", 0o755)
	expect("create", root+"/sub")
	g := root + "/sub/g"
	os.WriteFile(g, []byte("y"), 0o644)
	expect("create", g)
	os.Remove(f)
	expect("remove", f)
}
