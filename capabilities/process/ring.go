package process

import (
	"sync"
)

// ringInitialBytes is where a ring's storage starts; it doubles up to the
// ring's limit as output arrives, so a quiet process costs little memory.
const ringInitialBytes = 4 << 10

// Ring is a bounded buffer of one output stream with absolute byte offsets:
// byte k of the stream has offset k forever, even after the ring dropped it.
// It is also the fan-out of that stream: any number of readers read from any
// offset they like, and the writer never waits for a reader. A slow reader
// that falls behind the ring learns exactly how many bytes it lost.
type Ring struct {
	mu     sync.Mutex
	buf    []byte // circular; byte at offset o lives at buf[o%len(buf)]
	limit  int
	end    int64 // offset of the next byte written
	closed bool
	// changed is closed (and replaced) whenever bytes arrive or the ring
	// closes: a broadcast that costs the writer nothing per reader.
	changed chan struct{}
}

// NewRing returns a ring holding at most limit bytes (limit > 0).
func NewRing(limit int) *Ring {
	if limit <= 0 {
		limit = 1
	}
	return &Ring{limit: limit, changed: make(chan struct{})}
}

// Write appends p. It never blocks on readers and never fails; bytes beyond
// the ring's size push the oldest ones out.
func (r *Ring) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errRingClosed
	}
	r.grow(r.end + int64(n))
	if len(p) > len(r.buf) {
		// Only the tail fits; the head is lost to every reader anyway.
		r.end += int64(len(p) - len(r.buf))
		p = p[len(p)-len(r.buf):]
	}
	for len(p) > 0 {
		i := int(r.end % int64(len(r.buf)))
		c := copy(r.buf[i:], p)
		p = p[c:]
		r.end += int64(c)
	}
	r.broadcast()
	return n, nil
}

// grow makes room for the stream up to offset want, doubling the storage up
// to the limit and keeping every held byte at its offset's position.
func (r *Ring) grow(want int64) {
	held := r.held()
	if int64(len(r.buf)) >= want-r.start(held) || len(r.buf) >= r.limit {
		return
	}
	size := max(len(r.buf), ringInitialBytes)
	for int64(size) < want-r.start(held) && size < r.limit {
		size *= 2
	}
	size = min(size, r.limit)
	nb := make([]byte, size)
	for o := r.end - int64(held); o < r.end; {
		i, j := int(o%int64(len(r.buf))), int(o%int64(size))
		c := min(len(r.buf)-i, size-j, int(r.end-o))
		copy(nb[j:j+c], r.buf[i:i+c])
		o += int64(c)
	}
	r.buf = nb
}

// held is how many bytes the ring holds now.
func (r *Ring) held() int { return int(min(r.end, int64(len(r.buf)))) }

func (r *Ring) start(held int) int64 { return r.end - int64(held) }

func (r *Ring) broadcast() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Close marks the end of the stream: readers that reach End get eof.
func (r *Ring) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.broadcast()
	}
}

// storage is the bytes of memory the ring holds.
func (r *Ring) storage() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf)
}

// release drops the storage of a closed ring and answers its size: End
// stays, and a reader learns that every byte before it was lost (a gap).
func (r *Ring) release() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		return 0
	}
	n := len(r.buf)
	r.buf = nil
	return n
}

// End is the offset the next byte will have: the total bytes written.
func (r *Ring) End() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end
}

// Chunk is the answer of ReadAt.
type Chunk struct {
	// N bytes were copied, starting at offset From. From > the asked offset
	// means the ring no longer held the bytes in between: a gap.
	N    int
	From int64
	// EOF: the ring is closed and everything up to End was read.
	EOF bool
	// Changed is closed when more bytes arrive or the ring closes; wait on
	// it when N == 0 and !EOF.
	Changed <-chan struct{}
}

// ReadAt copies bytes from offset off (or, when the ring dropped it, from the
// oldest offset it still holds) into p. off beyond End reads nothing.
func (r *Ring) ReadAt(p []byte, off int64) Chunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := r.held()
	from := max(off, r.start(held))
	c := Chunk{From: from, Changed: r.changed}
	if from >= r.end {
		c.From = min(from, max(off, r.end))
		c.EOF = r.closed
		return c
	}
	n := min(int64(len(p)), r.end-from)
	for c.N < int(n) {
		i := int((from + int64(c.N)) % int64(len(r.buf)))
		c.N += copy(p[c.N:n], r.buf[i:])
	}
	return c
}
