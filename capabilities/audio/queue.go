package audio

import (
	"encoding/binary"
	"time"
)

// queue holds the audio received and not yet read: at most its capacity
// in frames, the oldest dropped to make room. Positions count frames
// (one sample per channel) from the stream's start, dropped ones
// included, so that a frame's position always maps to its time.
type queue struct {
	buf  []int16 // a ring of whole frames
	head int     // index in buf of the oldest value held
	n    int     // values held, a multiple of Channels

	// carry holds the start of a frame a block ended inside; the server
	// sends whole frames, but nothing here depends on it.
	carry   [bytesPerFrame]byte
	carried int

	written int64 // frames received
	read    int64 // position of the oldest frame held: frames taken or dropped
	dropped int64 // frames dropped
}

func newQueue(frames int) *queue { return &queue{buf: make([]int16, frames*Channels)} }

// frames is how many frames are held.
func (q *queue) frames() int { return q.n / Channels }

// write appends a block of s16le bytes and answers how many frames it
// dropped to make room.
func (q *queue) write(p []byte) (dropped int64) {
	before := q.dropped
	if q.carried > 0 {
		k := copy(q.carry[q.carried:], p)
		q.carried += k
		p = p[k:]
		if q.carried < bytesPerFrame {
			return 0
		}
		q.push(q.carry[:])
		q.carried = 0
	}
	whole := len(p) - len(p)%bytesPerFrame
	q.push(p[:whole])
	q.carried = copy(q.carry[:], p[whole:])
	return q.dropped - before
}

// push appends whole frames.
func (q *queue) push(b []byte) {
	frames := len(b) / bytesPerFrame
	q.written += int64(frames)
	capFrames := len(q.buf) / Channels
	if frames > capFrames {
		// Even the block alone is too much: only its newest part stays.
		skip := frames - capFrames
		b = b[skip*bytesPerFrame:]
		q.drop(q.frames())
		q.dropped += int64(skip)
		q.read += int64(skip)
		frames = capFrames
	}
	if over := q.frames() + frames - capFrames; over > 0 {
		q.drop(over)
	}
	pos := q.head + q.n
	if pos >= len(q.buf) {
		pos -= len(q.buf)
	}
	for i := 0; i < len(b); i += 2 {
		q.buf[pos] = int16(binary.LittleEndian.Uint16(b[i:]))
		if pos++; pos == len(q.buf) {
			pos = 0
		}
	}
	q.n += frames * Channels
}

// drop forgets the oldest frames.
func (q *queue) drop(frames int) {
	q.head = (q.head + frames*Channels) % len(q.buf)
	q.n -= frames * Channels
	q.read += int64(frames)
	q.dropped += int64(frames)
}

// take moves the oldest len(dst)/Channels frames into dst, which the
// caller made sure are held, and answers the position of the first.
func (q *queue) take(dst []int16) int64 {
	k := copy(dst, q.buf[q.head:min(len(q.buf), q.head+len(dst))])
	copy(dst[k:], q.buf)
	q.head = (q.head + len(dst)) % len(q.buf)
	q.n -= len(dst)
	pos := q.read
	q.read += int64(len(dst) / Channels)
	return pos
}

// clockWindow is how many blocks the clock's estimate looks back over:
// about 0.6 s of 10 ms blocks, long enough to hold a block that was not
// delayed, short enough for clock drift (100 ppm) to stay far below a
// millisecond.
const clockWindow = 64

// clock maps a stream position to the time its sample was received, by
// the arrival of the blocks: a block that ends at position e and arrives
// at t says the stream's position 0 was received at t - e/rate, or later,
// since a block can only be late (scheduling, the socket). The earliest
// of the recent estimates is the least delayed one.
type clock struct {
	base   time.Time                  // the first arrival; estimates are relative to it
	starts [clockWindow]time.Duration // recent estimates of position 0's time
	n      int                        // estimates held
	next   int                        // where the next goes
	start  time.Duration              // the earliest held
}

// observe takes a block's arrival.
func (k *clock) observe(arrival time.Time, end int64) {
	if k.base.IsZero() {
		k.base = arrival
	}
	s := arrival.Sub(k.base) - framesDuration(end)
	k.starts[k.next] = s
	k.next = (k.next + 1) % clockWindow
	k.n = min(k.n+1, clockWindow)
	k.start = s
	for _, v := range k.starts[:k.n] {
		k.start = min(k.start, v)
	}
}

// reset forgets the estimates: the stream paused (its source suspended)
// or moved, so positions and times no longer line up as before.
func (k *clock) reset() { k.n, k.next = 0, 0 }

// received is the time the sample at position pos was received.
func (k *clock) received(pos int64) time.Time {
	return k.base.Add(k.start + framesDuration(pos))
}
