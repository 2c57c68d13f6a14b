package files_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// waitFor reads events until one matches, or fails after a generous bound.
func waitFor(t *testing.T, w *files.Watcher, op, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s %s: %v", op, path, err)
		}
		if ev.Op == op && ev.Path == path {
			return
		}
	}
}

func TestWatchRecursive(t *testing.T) {
	root := t.TempDir()
	w, err := files.Watch(t.Context(), root, files.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "create", sub)
	f := filepath.Join(sub, "f")
	writeFile(t, f, "x")
	waitFor(t, w, "create", f)
	waitFor(t, w, "write", f)
	os.Remove(f)
	waitFor(t, w, "remove", f)
}

// A watcher whose client does not read queues at most QueueLen events, then
// says "overflow" once, then delivers new events again.
func TestWatchOverflow(t *testing.T) {
	root := t.TempDir()
	const queue = 4
	w, err := files.Watch(t.Context(), root, files.WatchOptions{QueueLen: queue})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 50 {
		writeFile(t, filepath.Join(root, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), "x")
	}
	// Not reading, wait until the watcher has had to drop events.
	deadline := time.Now().Add(10 * time.Second)
	for w.Dropped() == 0 && time.Now().Before(deadline) {
		<-time.After(time.Millisecond)
	}
	if w.Dropped() == 0 {
		t.Fatal("no event was dropped")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []api.WatchEvent
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, ev)
		if ev.Op == files.OpOverflow {
			break
		}
	}
	if len(got) > queue+1 {
		t.Fatalf("%d events before the overflow; want at most %d: %v", len(got)-1, queue, got)
	}
	// After the overflow, new events flow again. The inotify backlog of the
	// burst may still be arriving and overflow the tiny queue once more (the
	// client then re-lists, as it should); so write fresh files until one
	// create comes through, a bounded number of times.
	for i := range 20 {
		again := filepath.Join(root, fmt.Sprintf("again-%d", i))
		writeFile(t, again, "y")
		if sawCreate(t, w, again, time.Second) {
			return
		}
	}
	t.Fatal("no event came through after the overflow")
}

// sawCreate reads events for up to wait and reports whether the create of
// path was among them; an overflow ends the look early.
func sawCreate(t *testing.T, w *files.Watcher, path string, wait time.Duration) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return false
		}
		if ev.Op == "create" && ev.Path == path {
			return true
		}
		if ev.Op == files.OpOverflow {
			return false
		}
	}
}

func TestWatchBadPath(t *testing.T) {
	if _, err := files.Watch(t.Context(), filepath.Join(t.TempDir(), "nope"), files.WatchOptions{}); api.KindOf(err) != api.KindNotFound {
		t.Errorf("watch of a missing path: %v", err)
	}
	if _, err := files.Watch(t.Context(), "rel", files.WatchOptions{}); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("watch of a relative path: %v", err)
	}
}
