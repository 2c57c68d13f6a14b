package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/files"
)

// When a recursive watch reports a new directory, that directory is
// already watched: a client that sees "create dir" and then writes into it
// (or waits for someone who does) gets the events of what happens inside.
// The create used to be queued before the watch was added, so a write
// right after it was sometimes never reported.
func TestWatchNewDirectoryIsWatchedWhenReported(t *testing.T) {
	root := t.TempDir()
	w, err := files.Watch(t.Context(), root, files.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 2000 {
		sub := filepath.Join(root, fmt.Sprint("d", i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		waitFor(t, w, "create", sub)
		f := filepath.Join(sub, "f")
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, w, "write", f)
	}
}

// Directories that come and go below a recursive watch give their watches
// back: after more than MaxWatchDirs of them have lived and died, a new one
// is still watched, and no overflow claims that events were lost.
func TestWatchRemovedDirectoriesFreeTheirWatches(t *testing.T) {
	root := t.TempDir()
	w, err := files.Watch(t.Context(), root, files.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d := filepath.Join(root, "d")
	for range files.MaxWatchDirs + 10 {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		waitFor(t, w, "create", d)
		if err := os.Remove(d); err != nil {
			t.Fatal(err)
		}
		waitFor(t, w, "remove", d)
	}
	last := filepath.Join(root, "last")
	if err := os.Mkdir(last, 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "create", last)
	f := filepath.Join(last, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "write", f)
}
