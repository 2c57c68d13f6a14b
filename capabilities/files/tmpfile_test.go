package files_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// writers are the two ways a write makes its new content: an unnamed
// O_TMPFILE file (Linux), and the named temp file of other file systems.
var writers = []struct {
	name  string
	write func(string, io.Reader, files.WriteOptions) (api.WriteResult, error)
}{
	{"unnamed", files.WriteAtomic},
	{"named", files.WriteAtomicNamed},
}

// Both ways replace the file, keep its permission bits, and leave nothing
// else behind, whether the write succeeds, the body is cut or the disk is
// full.
func TestWriteAtomicBothWays(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := w.write(p, strings.NewReader("new"), files.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(p); fi.Mode() != 0o600 {
				t.Errorf("mode %v; want the old 0600", fi.Mode())
			}
			_, err := w.write(p, io.MultiReader(strings.NewReader("partial"), errReader{}), files.WriteOptions{})
			if api.KindOf(err) != api.KindTransferFailed {
				t.Errorf("cut body: %v", err)
			}
			if b, _ := os.ReadFile(p); string(b) != "new" {
				t.Errorf("after a cut body the file holds %q", b)
			}
			// A new file through the no-overwrite path of an unnamed file.
			if _, err := w.write(filepath.Join(dir, "g"), strings.NewReader("g"), files.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(entries(t, dir), " "); got != "f g" {
				t.Errorf("left %q; want only f g", got)
			}

			full := smallTmpfs(t, "1m")
			fp := filepath.Join(full, "f")
			writeFile(t, fp, "previous")
			if _, err := w.write(fp, bytes.NewReader(make([]byte, 2<<20)), files.WriteOptions{}); api.KindOf(err) != api.KindIO {
				t.Errorf("disk full: %v", err)
			}
			if got := strings.Join(entries(t, full), " "); got != "f" {
				t.Errorf("left %q on a full disk; want only f", got)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection cut") }

// While the body streams in, an unnamed write shows nothing in the
// directory: a daemon killed at that moment leaves nothing behind. The named
// way shows its temp file (which the journal then records for a sweep).
func TestUnnamedWriteShowsNothingWhileWriting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("O_TMPFILE is Linux's")
	}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{0, "f"},
		{1, "f + temp"},
	} {
		w := writers[tc.w]
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			writeFile(t, p, "old")
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				_, err := w.write(p, pr, files.WriteOptions{})
				done <- err
			}()
			// A full copy buffer makes the writer write it out, then wait
			// for more: the temp file exists and holds bytes now.
			if _, err := pw.Write(make([]byte, files.CopyBufferBytes)); err != nil {
				t.Fatal(err)
			}
			if _, err := pw.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			got := "f"
			for _, n := range entries(t, dir) {
				if n != "f" {
					if !strings.HasPrefix(n, ".f.cua-write-") {
						t.Errorf("unexpected entry %q", n)
					}
					got += " + temp"
				}
			}
			pw.CloseWithError(errors.New("cut"))
			if err := <-done; api.KindOf(err) != api.KindTransferFailed {
				t.Errorf("write: %v", err)
			}
			if got != tc.want {
				t.Errorf("while writing the directory held %s; want %s", got, tc.want)
			}
			if got := strings.Join(entries(t, dir), " "); got != "f" {
				t.Errorf("left %q", got)
			}
		})
	}
}
