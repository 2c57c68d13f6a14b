package jpegenc

import (
	"encoding/binary"
	"math/bits"
)

// maxACSize is the largest AC magnitude category Annex K codes.
const maxACSize = 10

// bitWriter packs Huffman codes MSB first into buf, stuffing a zero byte
// after every 0xFF of entropy-coded data (T.81 F.1.2.3) so a decoder never
// mistakes data for a marker.
type bitWriter struct {
	buf []byte
	acc uint64 // the pending bits are the low n bits
	n   uint
}

// put appends the low size bits of code; size is at most 27 (a 16-bit
// code and 11 magnitude bits), so with fewer than 32 bits pending the
// accumulator never overflows.
func (w *bitWriter) put(code uint32, size uint32) {
	w.acc = w.acc<<size | uint64(code)
	w.n += uint(size)
	if w.n >= 32 {
		w.flush32()
	}
}

// flush32 emits the oldest 32 pending bits, four bytes at once unless one
// of them is 0xFF.
func (w *bitWriter) flush32() {
	w.n -= 32
	v := uint32(w.acc >> w.n)
	x := ^v // a 0xFF byte of v is a zero byte of x
	if (x-0x01010101)&^x&0x80808080 == 0 {
		w.buf = binary.BigEndian.AppendUint32(w.buf, v)
		return
	}
	for s := 24; s >= 0; s -= 8 {
		b := byte(v >> s)
		w.buf = append(w.buf, b)
		if b == 0xff {
			w.buf = append(w.buf, 0)
		}
	}
}

// align pads the pending bits with 1s to a whole byte (F.1.2.3: before a
// marker) and emits them.
func (w *bitWriter) align() {
	if r := w.n % 8; r != 0 {
		w.acc = w.acc<<(8-r) | (1<<(8-r) - 1)
		w.n += 8 - r
	}
	for w.n >= 8 {
		w.n -= 8
		b := byte(w.acc >> w.n)
		w.buf = append(w.buf, b)
		if b == 0xff {
			w.buf = append(w.buf, 0)
		}
	}
	w.acc = 0
}

// magnitude returns the category (T.81 F.1.2.1: the bit length of |v|)
// and the low category bits that follow its code: v itself when positive,
// v-1 (the ones' complement of |v|) when negative.
func magnitude(v int32) (size uint32, extra uint32) {
	s := v >> 31
	size = uint32(bits.Len32(uint32((v ^ s) - s)))
	return size, uint32(v+s) & (1<<size - 1)
}

// encodeBlock codes one quantised block in zig-zag order (F.1.2): the DC
// difference from the previous block of the component, then each non-zero
// AC coefficient as (zeros before it, category) and its bits, 16-zero runs
// as ZRL, and EOB when the block ends in zeros. nz has bit k set for each
// non-zero AC coefficient k.
func (w *bitWriter) encodeBlock(zz *[blockSize]int32, nz uint64, prevDC *int32, dc, ac *huffTable) {
	size, extra := magnitude(zz[0] - *prevDC)
	*prevDC = zz[0]
	h := dc[size]
	w.put(h.code<<size|extra, h.size+size)

	next := 1 // the zig-zag index after the last coded coefficient
	for nz != 0 {
		k := bits.TrailingZeros64(nz)
		nz &= nz - 1
		run := k - next
		for ; run >= 16; run -= 16 {
			z := ac[0xf0]
			w.put(z.code, z.size)
		}
		size, extra := magnitude(zz[k])
		if size > maxACSize {
			size, extra = magnitude(min(max(zz[k], -maxAC), maxAC))
		}
		h := ac[uint32(run)<<4|size]
		w.put(h.code<<size|extra, h.size+size)
		next = k + 1
	}
	if next < blockSize {
		e := ac[0x00]
		w.put(e.code, e.size)
	}
}
