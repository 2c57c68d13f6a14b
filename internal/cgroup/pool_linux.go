//go:build linux

package cgroup

import "time"

const (
	// poolSize is how many groups a tree keeps made ahead: making one
	// (a mkdir per hierarchy, its limits, its files) and removing one are
	// most of what containment costs a start, and neither needs to be on
	// the start's path.
	poolSize = 4
	// removeQueue bounds the groups waiting to be removed in the
	// background; past it Release removes at once.
	removeQueue = 256
	// poolRetry is the pause after the pool failed to make a group (the
	// caller of Take then makes its own and learns why).
	poolRetry = time.Second
)

// pool makes groups ahead and removes released ones, off the start path.
type pool struct {
	ready   chan *Group
	release chan *Group
	stop    chan struct{}
	done    chan struct{}
}

func (t *Tree) startPool() {
	t.pool = &pool{
		ready:   make(chan *Group, poolSize),
		release: make(chan *Group, removeQueue),
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
		var ready chan *Group
		if next == nil {
			if g, err := t.New("g" + randomHex(8)); err == nil {
				next = g
			}
		}
		if next != nil {
			ready = p.ready // a nil channel never takes: wait for a release or the stop
		}
		var retry <-chan time.Time
		if next == nil {
			retry = time.After(poolRetry)
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
			_ = g.Remove() // Close removes whatever is left
		case <-retry:
		}
	}
}

// Take answers a new, empty group with the tree's per-group limits: one
// made ahead, or a fresh one when none is ready.
func (t *Tree) Take() (*Group, error) {
	select {
	case g := <-t.pool.ready:
		return g, nil
	default:
		return t.New("g" + randomHex(8))
	}
}

// Release removes an empty group in the background (at once when the
// queue is full). A group that still holds processes stays until Close.
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
