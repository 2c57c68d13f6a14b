package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/trycua/cua-spacesd/api"
)

// Limits of a watch.
const (
	// WatchQueueLen bounds the events queued for one watcher that does not
	// keep up; past it events are dropped and one "overflow" event tells
	// the client to list again.
	WatchQueueLen = 1024
	// MaxWatchDirs bounds the directories one recursive watch follows
	// (each costs an inotify watch, a per-user kernel resource).
	MaxWatchDirs = 8192
)

// OpOverflow is the event op that says events were dropped.
const OpOverflow = "overflow"

// WatchOptions adjust Watch.
type WatchOptions struct {
	Recursive bool
	QueueLen  int // default WatchQueueLen
}

// Watcher delivers the events of one watched path. Its goroutine stops
// when the context given to Watch ends or Close is called.
type Watcher struct {
	fsw       *fsnotify.Watcher
	root      string
	recursive bool
	queueLen  int

	mu         sync.Mutex
	queue      []api.WatchEvent
	overflowed bool
	dropped    int64
	dirs       int
	ready      chan struct{} // has a value when the queue changed

	cancel context.CancelFunc
	done   chan struct{}
}

// FSWatchSupported reports whether the kernel lets us create a watcher,
// with the reason when it does not (inotify limits, a missing backend).
func FSWatchSupported() (bool, string) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return false, "cannot create a file watcher: " + err.Error() + " (raise fs.inotify.max_user_instances)"
	}
	w.Close()
	return true, ""
}

// Watch starts watching path (a directory, or a file) and, with Recursive,
// every directory below it, including ones created later.
func Watch(ctx context.Context, path string, opt WatchOptions) (*Watcher, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fsError("watch", p, err)
	}
	if opt.QueueLen <= 0 {
		opt.QueueLen = WatchQueueLen
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, api.Errorf(api.KindEnv, "watch %s: cannot create a file watcher: %w", p, err)
	}
	w := &Watcher{fsw: fsw, root: p, recursive: opt.Recursive && fi.IsDir(), queueLen: opt.QueueLen,
		ready: make(chan struct{}, 1), done: make(chan struct{})}
	if err := fsw.Add(p); err != nil {
		fsw.Close()
		return nil, fsError("watch", p, err)
	}
	w.dirs = 1
	if w.recursive {
		w.addTree(p, false)
	}
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return w, nil
}

// Close stops the watch and waits for its goroutine.
func (w *Watcher) Close() {
	w.cancel()
	<-w.done
}

func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	defer w.fsw.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.handle(ev)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.mu.Lock()
				w.overflowed = true
				w.mu.Unlock()
				w.signal()
			}
		}
	}
}

func (w *Watcher) handle(ev fsnotify.Event) {
	newDir := false
	if w.recursive && ev.Op&fsnotify.Create != 0 {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			// Watch the new directory before reporting it: a client that
			// sees "create dir" and then writes into it must get the
			// events of that write.
			newDir = w.addDir(ev.Name)
		}
	}
	for _, op := range []struct {
		bit  fsnotify.Op
		name string
	}{{fsnotify.Create, "create"}, {fsnotify.Write, "write"}, {fsnotify.Remove, "remove"}, {fsnotify.Rename, "rename"}, {fsnotify.Chmod, "chmod"}} {
		if ev.Op&op.bit != 0 {
			w.push(api.WatchEvent{Op: op.name, Path: ev.Name})
		}
	}
	if newDir {
		// Entries made in the new directory before its watch was added
		// would be missed: report them as created.
		w.addTree(ev.Name, true)
	}
}

// addTree adds watches below dir; report sends a create event per entry.
func (w *Watcher) addTree(dir string, report bool) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		if report {
			w.push(api.WatchEvent{Op: "create", Path: p})
		}
		if d.IsDir() {
			if !w.addDir(p) {
				return filepath.SkipAll
			}
		}
		return nil
	})
}

// addDir watches one more directory, unless MaxWatchDirs is reached: then
// the client is told by an overflow that it no longer sees everything.
func (w *Watcher) addDir(p string) bool {
	w.mu.Lock()
	full := w.dirs >= MaxWatchDirs
	if full {
		// The watches of directories removed or moved away since went
		// with them (the kernel drops them, and fsnotify forgets them)
		// without being counted here: count what is really watched.
		w.dirs = len(w.fsw.WatchList())
		full = w.dirs >= MaxWatchDirs
	}
	if full {
		w.overflowed = true
	} else {
		w.dirs++
	}
	w.mu.Unlock()
	if full {
		w.signal()
		return false
	}
	if err := w.fsw.Add(p); err != nil {
		w.mu.Lock()
		w.dirs--
		w.mu.Unlock()
	}
	return true
}

// push queues one event, or drops it once the queue is full: the client is
// then owed one overflow event, delivered after what was queued.
func (w *Watcher) push(ev api.WatchEvent) {
	w.mu.Lock()
	switch {
	case w.overflowed:
		w.dropped++
	case len(w.queue) >= w.queueLen:
		w.overflowed = true
		w.dropped++
	default:
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	w.signal()
}

func (w *Watcher) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// Dropped counts the events dropped because the client did not keep up.
func (w *Watcher) Dropped() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Next returns the next event, waiting until one comes or ctx ends. After
// an overflow it returns the queued events, then {"op":"overflow"}, and
// queues new events again from then on.
func (w *Watcher) Next(ctx context.Context) (api.WatchEvent, error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			ev := w.queue[0]
			w.queue[0] = api.WatchEvent{}
			w.queue = w.queue[1:]
			if len(w.queue) == 0 {
				w.queue = nil // let the backing array go
			}
			w.mu.Unlock()
			return ev, nil
		}
		if w.overflowed {
			w.overflowed = false
			w.mu.Unlock()
			return api.WatchEvent{Op: OpOverflow}, nil
		}
		w.mu.Unlock()
		select {
		case <-w.ready:
		case <-w.done:
			return api.WatchEvent{}, api.Errorf(api.KindCancelled, "watch %s ended", w.root)
		case <-ctx.Done():
			return api.WatchEvent{}, api.Errorf(api.KindCancelled, "watch %s: %w", w.root, ctx.Err())
		}
	}
}
