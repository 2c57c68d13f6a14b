package store

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// mirror is a bucket kept in memory by a watch. The hot path of every
// relayed request (whose token is this, whose computer is that) reads it
// instead of asking JetStream: three request/replies through the
// in-process server per call were most of what the relay added to an exec.
//
// A key the watch has not delivered yet is read from the bucket, so a
// record just written is found at once. A change or a removal reaches the
// mirror as the watch delivers it (milliseconds): that long, a removed
// user's token or a removed computer may still be seen by a relayed
// request on another node; this node's own removals are forgotten at once
// (forget). A computer token the mirrors refuse at attach is read again
// from the buckets themselves (a rotation just replaced its record:
// ComputerByToken).
type mirror struct {
	kv     jetstream.KeyValue
	w      jetstream.KeyWatcher
	cancel context.CancelFunc // ends the watch's context

	mu sync.RWMutex
	m  map[string][]byte

	done chan struct{} // closed when the watch ended
}

// newMirror follows kv until stop; it answers once the watch delivered
// every key the bucket held.
func newMirror(ctx context.Context, kv jetstream.KeyValue) (*mirror, error) {
	// The watch lives as long as the store, not the opening call.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return nil, storeErr("watch "+kv.Bucket(), err)
	}
	m := &mirror{kv: kv, w: w, cancel: cancel, m: map[string][]byte{}, done: make(chan struct{})}
	ready := make(chan struct{})
	go m.follow(ready)
	select {
	case <-ready:
		return m, nil
	case <-m.done:
		return nil, storeErr("watch "+kv.Bucket(), context.Canceled)
	case <-ctx.Done():
		m.stop()
		return nil, storeErr("watch "+kv.Bucket(), ctx.Err())
	}
}

func (m *mirror) follow(ready chan struct{}) {
	defer close(m.done)
	initial := true
	for e := range m.w.Updates() {
		if e == nil { // every key held at the start was delivered
			if initial {
				close(ready)
				initial = false
			}
			continue
		}
		m.mu.Lock()
		if e.Operation() == jetstream.KeyValuePut {
			m.m[e.Key()] = e.Value()
		} else {
			delete(m.m, e.Key())
		}
		m.mu.Unlock()
	}
}

// get answers the value of key: the mirror's, or the bucket's when the
// mirror has not seen it (jetstream.ErrKeyNotFound when neither has).
func (m *mirror) get(ctx context.Context, key string) ([]byte, error) {
	m.mu.RLock()
	v, ok := m.m[key]
	m.mu.RUnlock()
	if ok {
		return v, nil
	}
	e, err := m.kv.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

// forget drops key at once, for a removal this node made: its own next
// read must not find what it just removed, whenever the watch delivers
// the removal (read your own writes). Another node's removals still
// arrive with the watch.
func (m *mirror) forget(key string) {
	m.mu.Lock()
	delete(m.m, key)
	m.mu.Unlock()
}

// stop ends the watch and waits for its goroutine. The store closes its
// connection first (Close says why); the watch ends with it.
func (m *mirror) stop() {
	m.cancel()
	_ = m.w.Stop()
	<-m.done
}
