//go:build linux

package cgroup

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// poolSize is how many groups a tree keeps ready (made ahead, or
	// recycled), and poolMin how few before it makes more: making one (a
	// mkdir per hierarchy, its limits, its files) and removing one are
	// most of what containment costs a start, and neither needs to be on
	// the start's path. Between the two, a steady stream of short starts
	// runs on recycled groups without making or removing any.
	poolSize = 4
	poolMin  = 2
	// removeQueue bounds the groups waiting to be removed in the
	// background; past it Release removes at once.
	removeQueue = 256
	// poolRetry is the pause after the pool failed to make a group (the
	// caller of Take then makes its own and learns why).
	poolRetry = time.Second
	// recycleMaxMemory is the most memory an emptied group may still have
	// charged (page cache of what its processes read) and be reused.
	recycleMaxMemory = 4 << 20
)

// pool makes groups ahead, and recycles or removes released ones, off the
// start path.
type pool struct {
	ready   chan *Group
	release chan *Group
	// taken nudges the pool after a Take, to look whether it is short.
	taken chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

func (t *Tree) startPool() {
	t.pool = &pool{
		ready:   make(chan *Group, poolSize),
		release: make(chan *Group, removeQueue),
		taken:   make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go t.runPool()
}

func (t *Tree) runPool() {
	p := t.pool
	defer close(p.done)
	var next *Group
	for {
		var (
			ready chan *Group // nil (never sends) while there is no next
			retry <-chan time.Time
		)
		if next == nil && len(p.ready) < poolMin {
			g, err := t.New("g" + randomHex(8))
			if err != nil {
				retry = time.After(poolRetry)
			}
			next = g
		}
		if next != nil {
			ready = p.ready
		}
		select {
		case <-p.stop:
			if next != nil {
				_ = next.Remove()
			}
			return
		case ready <- next:
			next = nil
		case g := <-p.release:
			if t.recycle(g) {
				select {
				case p.ready <- g:
					continue
				default:
				}
			}
			_ = g.Remove() // Close removes whatever is left
		case <-p.taken:
		case <-retry:
		}
	}
}

// Take answers a new, empty group with the tree's per-group limits: one
// made ahead, or a fresh one when none is ready.
func (t *Tree) Take() (*Group, error) {
	select {
	case g := <-t.pool.ready:
		select {
		case t.pool.taken <- struct{}{}:
		default: // a nudge is already pending
		}
		return g, nil
	default:
		return t.New("g" + randomHex(8))
	}
}

// Release hands back an empty group: in the background it is recycled for
// another process when nothing of its last tree is left in it (see
// recycle), else removed (at once when the queue is full). A group that
// still holds processes stays until Close.
func (t *Tree) Release(g *Group) {
	g.closeFiles()
	select {
	case t.pool.release <- g:
	default:
		_ = g.Remove()
	}
}

// stopPool ends the pool and removes the groups it made ahead.
func (t *Tree) stopPool() {
	close(t.pool.stop)
	<-t.pool.done
	for {
		select {
		case g := <-t.pool.ready:
			_ = g.Remove()
		case g := <-t.pool.release:
			_ = g.Remove()
		default:
			return
		}
	}
}

// recycle readies an emptied group for another process when nothing of
// its last tree is left in it: never killed, no process, no cgroup below it, no task
// still charged to its pids (a zombie nobody reaped), and little memory
// still charged (page cache its processes read stays charged to it). A
// recycled group spares a mkdir and an rmdir per hierarchy, which hold the
// kernel's cgroup_mutex (as a fork into a cgroup does) and were most of
// what containment cost an exec.
func (t *Tree) recycle(g *Group) bool {
	if g.killed.Load() {
		return false // see Group.killed
	}
	if populated, err := g.Populated(); err != nil || populated {
		return false
	}
	for _, h := range t.hiers() {
		entries, err := os.ReadDir(g.dir(h))
		if err != nil || slices.ContainsFunc(entries, fs.DirEntry.IsDir) {
			return false
		}
	}
	if h := t.pidsHier(); h != nil && readCounter(filepath.Join(g.dir(h), "pids.current")) != 0 {
		return false
	}
	if h, file := t.memoryUsage(); h != nil && readCounter(filepath.Join(g.dir(h), file)) > recycleMaxMemory {
		return false
	}
	return g.open() == nil
}

// readCounter reads a cgroup counter; an unreadable one is never small.
func readCounter(p string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(readString(p)), 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}
