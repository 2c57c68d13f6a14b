package files

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A new file's content is linked to its name without replacing; when the
// name was taken meanwhile, the write replaces it after all. On the named
// way (no O_TMPFILE) that second commit finds its temp file closed and
// already synced, and goes straight to the rename.
func TestCommitAgainAfterTheNameWasTaken(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		dir := t.TempDir()
		d, err := newWalker("test").walk(nil, dir)
		if err != nil {
			t.Fatal(err)
		}
		tf, err := newTempFile(d, "f", unnamed, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tf.f.Write([]byte("new")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte("raced"), 0o644); err != nil {
			t.Fatal(err)
		}
		m := fileMeta{mode: 0o640, uid: -1, gid: -1}
		if err := tf.commit(m, "f", false); !errors.Is(err, os.ErrExist) {
			t.Fatalf("unnamed=%v: commit without overwrite: %v; want ErrExist", unnamed, err)
		}
		if err := tf.commit(m, "f", true); err != nil {
			t.Fatalf("unnamed=%v: commit again: %v", unnamed, err)
		}
		tf.discard()
		d.Close()
		if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "new" {
			t.Errorf("unnamed=%v: f holds %q", unnamed, b)
		}
		if got := names(t, dir); got != "f" {
			t.Errorf("unnamed=%v: left %q", unnamed, got)
		}
	}
}
