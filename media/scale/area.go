package scale

import "encoding/binary"

// The area average is separable: the mean over a rectangle is the mean
// over its rows of the means over its columns. Each source row is first
// shrunk to the output width (horizontal pass: two source pixels of a
// channel in one multiply, see dot2), then each output row sums the
// shrunk rows it covers (vertical pass: a channel of two output pixels in
// the two 32-bit lanes of one multiply). A band keeps the few shrunk rows
// that neighbouring output rows share in a ring.
//
// Weights are fixed point with weightBits of fraction on each axis, and
// those of one output pixel add up to exactly one, so a flat area keeps
// its colour exactly. A horizontal sum is at most 255 << weightBits (20
// bits); a vertical sum of those at most 255 << 2*weightBits, which fits
// its 32-bit lane. Each weight is within one unit (2^-12) of its true
// fraction, so a pixel is off by at most 255 * taps / 2^12 levels on each
// axis before rounding (0.19 at the 2:3 of 1920 to 1280).
const (
	weightBits = 12
	weightOne  = 1 << weightBits
	// outShift brings a vertical sum back to 8 bits; outHalf rounds it,
	// in both 32-bit lanes of a word.
	outShift = 2 * weightBits
	outHalf  = 1<<(outShift-1) | 1<<(32+outShift-1)
	// laneMask picks byte 0 of each 32-bit half of a word: one channel of
	// two pixels, each in a 32-bit lane.
	laneMask = 0x000000ff_000000ff
	// opaque is the fourth byte of two output pixels, 0xff.
	opaque = 0xff000000_ff000000
	// pairBytes is the size of two output pixels' horizontal sums: a word
	// per channel (blue, green, red), each output pixel in a lane.
	pairBytes = 24
)

// axis holds the weights of one axis: output pixel i is the weighted sum
// of source pixels first[i], first[i]+1, ..., with weights
// w[off[i]:off[i+1]].
type axis struct {
	first []int32
	off   []int32
	w     []uint32
	// maxTaps is the most source pixels one output pixel spans.
	maxTaps int
}

// newAxis computes the weights of an axis of n source pixels and m output
// pixels at ratio r (in lowest terms). In units of 1/r.Num source pixel,
// output pixel i covers [i*Den, (i+1)*Den) and source pixel j covers
// [j*Num, (j+1)*Num); the weight of j in i is their overlap over i's
// coverage (less than Den only where Size rounded a side up to 1). Each
// weight is the difference of two rounded cumulative sums, so the weights
// of a pixel add up to exactly weightOne.
func newAxis(n, m int, r Ratio) axis {
	a := axis{first: make([]int32, m), off: make([]int32, m+1)}
	a.w = make([]uint32, 0, m+n) // each source pixel is in at most two outputs
	// int64: a side times Den may pass 2^31 (MaxSide squared is 2^32).
	num, den := int64(r.Num), int64(r.Den)
	end := int64(n) * num
	for i := range int64(m) {
		lo, hi := i*den, min((i+1)*den, end)
		cover := hi - lo
		j0, j1 := lo/num, (hi+num-1)/num
		a.first[i] = int32(j0)
		var cum, last int64
		for j := j0; j < j1; j++ {
			cum += min(hi, (j+1)*num) - max(lo, j*num)
			next := (cum*weightOne + cover/2) / cover
			a.w = append(a.w, uint32(next-last))
			last = next
		}
		a.off[i+1] = int32(len(a.w))
		a.maxTaps = max(a.maxTaps, int(j1-j0))
	}
	return a
}

// taps are output pixel i's weights.
func (a *axis) taps(i int) []uint32 { return a.w[a.off[i]:a.off[i+1]] }

// plan is what every band of one scaling shares, read only: output
// columns [x0, x1) are made, x0 even.
type plan struct {
	src, dst Frame
	to       Format
	x0, x1   int
	*geometry
}

// geometry is what a scaling of one source size by one ratio needs,
// whatever the pixels: weights and offsets. A Scaler keeps the last one,
// as an agent's screenshots are all of one size.
type geometry struct {
	key        geometryKey
	cols, rows axis
	// pw are the columns' weights for dot2: t (even) per output pixel,
	// zero past its own, two to a word.
	pw []uint64
	t  int
	// fast is how many leading output pixels read t source pixels within
	// the row; the last few go pixel by pixel.
	fast int
	// pairs2 are the fast output pixels two by two when t is 2.
	pairs2 []pair2
}

type geometryKey struct {
	w, h int
	r    Ratio
}

// pair2 is two neighbouring output pixels of a two-tap axis: the byte
// offsets of their first source pixels, and their weights for dot2.
type pair2 struct {
	a, b   int
	wa, wb uint64
}

// newGeometry plans the scaling of a w x h source by r (in lowest terms).
func newGeometry(w, h int, r Ratio) *geometry {
	ow, oh := r.Size(w, h)
	g := &geometry{key: geometryKey{w, h, r}, cols: newAxis(w, ow, r), rows: newAxis(h, oh, r)}
	g.t = (g.cols.maxTaps + 1) &^ 1
	g.pw = make([]uint64, ow*g.t/2)
	for i := range ow {
		for k, wt := range g.cols.taps(i) {
			// dot2 wants the first pixel's weight in the high half.
			g.pw[i*g.t/2+k/2] |= uint64(wt) << (32 * uint(1-k%2))
		}
		if int(g.cols.first[i])+g.t <= w {
			g.fast = i + 1
		}
	}
	if g.t == 2 {
		g.fast &^= 1
		g.pairs2 = make([]pair2, g.fast/2)
		for i := range g.pairs2 {
			x := 2 * i
			g.pairs2[i] = pair2{a: int(g.cols.first[x]) * 4, b: int(g.cols.first[x+1]) * 4, wa: g.pw[x], wb: g.pw[x+1]}
		}
	}
	return g
}

// dot2 is c0*w0 + c1*w1 of two adjacent 32-bit lanes c = c0 | c1<<32 and
// weights w = w1 | w0<<32, in one multiply: the middle term of the product
// is the sum, at bits 32-63, when it fits 32 bits (and c0*w1 does too, so
// no carry reaches it).
func dot2(c, w uint64) uint64 { return c * w >> 32 }

// band is one goroutine's ring of shrunk source rows.
type band struct {
	ring  []byte // slots of rowBytes each
	slot  []int  // the source row each slot holds, or -1
	rows  [][]byte
	bytes int // one shrunk row: pairs of output pixels
}

// reset makes room for n rows of w output pixels, all empty.
func (b *band) reset(w, n int) {
	b.bytes = (w + 1) / 2 * pairBytes
	if cap(b.ring) < n*b.bytes {
		b.ring = make([]byte, n*b.bytes)
	}
	b.ring = b.ring[:n*b.bytes]
	b.slot = b.slot[:0]
	for range n {
		b.slot = append(b.slot, -1)
	}
}

// shrunk is source row y shrunk to the output width, made if the ring
// does not hold it.
func (b *band) shrunk(p *plan, y int) []byte {
	i := y % len(b.slot)
	row := b.ring[i*b.bytes:][:b.bytes]
	if b.slot[i] != y {
		b.slot[i] = y
		p.horizontal(row, p.src.Pix[y*p.src.Stride:][:p.src.Width*bytesPerPixel])
	}
	return row
}

// scaleRows writes output rows [y0, y1), columns [p.x0, p.x1), of p.dst.
func (b *band) scaleRows(p *plan, y0, y1 int) {
	b.reset(p.dst.Width, p.rows.maxTaps)
	off := p.x0 / 2 * pairBytes
	for y := y0; y < y1; y++ {
		first := int(p.rows.first[y])
		ws := p.rows.taps(y)
		b.rows = b.rows[:0]
		for k := range ws {
			b.rows = append(b.rows, b.shrunk(p, first+k)[off:])
		}
		p.vertical(p.dst.Pix[y*p.dst.Stride+p.x0*bytesPerPixel:][:(p.x1-p.x0)*bytesPerPixel], b.rows, ws)
	}
}

// horizontal shrinks one source row into out (the whole output width),
// columns [p.x0, p.x1), a word per channel for each pair of output pixels.
// Pixels are read two at a time, as one word; each channel's two go
// through one dot2 per pair of taps.
func (p *plan) horizontal(out, src []byte) {
	first, pw := p.cols.first, p.pw
	x := p.x0
	fast := min(p.fast, p.x1)
	if p.t == 2 {
		// Any shrink to between 1/2 and 1: an output pixel spans at most
		// two source pixels.
		if end := fast &^ 1; x < end {
			shrink2(out[x/2*pairBytes:], src, p.pairs2[x/2:end/2])
			x = end
		}
	} else {
		half := p.t / 2
		for ; x < fast; x++ {
			s := src[int(first[x])*4:]
			var sb, sg, sr uint64
			for k, w := range pw[x*half : (x+1)*half] {
				v := binary.LittleEndian.Uint64(s[k*8:])
				sb += dot2(v&laneMask, w)
				sg += dot2(v>>8&laneMask, w)
				sr += dot2(v>>16&laneMask, w)
			}
			putSums(out, x, sb, sg, sr)
		}
	}
	// The last pixels' words would run past the row: one pixel at a time.
	for ; x < p.x1; x++ {
		s := src[int(first[x])*4:]
		var sb, sg, sr uint64
		for k, w := range p.cols.taps(x) {
			v := uint64(binary.LittleEndian.Uint32(s[k*4:]))
			sb += uint64(w) * (v & 0xff)
			sg += uint64(w) * (v >> 8 & 0xff)
			sr += uint64(w) * (v >> 16 & 0xff)
		}
		putSums(out, x, sb, sg, sr)
	}
}

// shrink2 is horizontal for two taps, a pair of output pixels at a time.
// It is a function of its own, with few values live in its loop, so that
// they all stay in registers.
func shrink2(out, src []byte, pairs []pair2) {
	for i := range pairs {
		p := &pairs[i]
		o := (*[pairBytes]byte)(out[i*pairBytes : i*pairBytes+pairBytes])
		v := binary.LittleEndian.Uint64(src[p.a : p.a+8])
		w := p.wa
		g := v >> 8
		r := v >> 16
		binary.LittleEndian.PutUint32(o[0:], uint32(dot2(v&laneMask, w)))
		binary.LittleEndian.PutUint32(o[8:], uint32(dot2(g&laneMask, w)))
		binary.LittleEndian.PutUint32(o[16:], uint32(dot2(r&laneMask, w)))
		v = binary.LittleEndian.Uint64(src[p.b : p.b+8])
		w = p.wb
		g = v >> 8
		r = v >> 16
		binary.LittleEndian.PutUint32(o[4:], uint32(dot2(v&laneMask, w)))
		binary.LittleEndian.PutUint32(o[12:], uint32(dot2(g&laneMask, w)))
		binary.LittleEndian.PutUint32(o[20:], uint32(dot2(r&laneMask, w)))
	}
}

// putSums stores output pixel x's horizontal sums in its lanes.
func putSums(out []byte, x int, sb, sg, sr uint64) {
	o := out[x/2*pairBytes+x%2*4:][:20]
	binary.LittleEndian.PutUint32(o[0:], uint32(sb))
	binary.LittleEndian.PutUint32(o[8:], uint32(sg))
	binary.LittleEndian.PutUint32(o[16:], uint32(sr))
}

// vertical sums the shrunk rows, weighted by ws, into one output row, two
// output pixels at a time, and packs them into their format.
func (p *plan) vertical(out []byte, rows [][]byte, ws []uint32) {
	rgba := p.to == RGBA
	whole := len(out) &^ 7
	switch len(ws) {
	case 2: // a shrink to between 1/2 and 1
		blend2(out[:whole], rows[0], rows[1], uint64(ws[0]), uint64(ws[1]), rgba, opaque)
	default:
		for o := 0; o < whole; o += 8 {
			sb, sg, sr := sum(rows, ws, o/8*pairBytes)
			binary.LittleEndian.PutUint64(out[o:], pack(sb, sg, sr, rgba)|opaque)
		}
	}
	if whole < len(out) { // an odd width: the last pair holds one pixel
		sb, sg, sr := sum(rows, ws, whole/8*pairBytes)
		binary.LittleEndian.PutUint32(out[whole:], uint32(pack(sb, sg, sr, rgba)|opaque))
	}
}

// blend2 is vertical for two rows; out holds whole pairs of pixels. alpha
// is opaque, passed in: a constant top byte made the compiler split each
// 8-byte store into four.
func blend2(out, r0, r1 []byte, w0, w1 uint64, rgba bool, alpha uint64) {
	for i := range len(out) / 8 {
		// Slices with both ends spelled out: the bounds check then covers
		// the whole array, and the 8-byte reads in it need none.
		a := (*[pairBytes]byte)(r0[i*pairBytes : i*pairBytes+pairBytes])
		c := (*[pairBytes]byte)(r1[i*pairBytes : i*pairBytes+pairBytes])
		sb := w0*binary.LittleEndian.Uint64(a[0:]) + w1*binary.LittleEndian.Uint64(c[0:])
		sg := w0*binary.LittleEndian.Uint64(a[8:]) + w1*binary.LittleEndian.Uint64(c[8:])
		sr := w0*binary.LittleEndian.Uint64(a[16:]) + w1*binary.LittleEndian.Uint64(c[16:])
		binary.LittleEndian.PutUint64(out[i*8:i*8+8], pack(sb, sg, sr, rgba)|alpha)
	}
}

// sum is the weighted sum of the shrunk rows' channel words at byte o.
func sum(rows [][]byte, ws []uint32, o int) (sb, sg, sr uint64) {
	for k, w32 := range ws {
		a, w := rows[k][o:][:pairBytes], uint64(w32)
		sb += w * binary.LittleEndian.Uint64(a[0:])
		sg += w * binary.LittleEndian.Uint64(a[8:])
		sr += w * binary.LittleEndian.Uint64(a[16:])
	}
	return sb, sg, sr
}

// pack rounds the lanes of three channel words to bytes and lays them out
// as two pixels, BGRX or RGBA, the fourth byte zero.
func pack(sb, sg, sr uint64, rgba bool) uint64 {
	sb = (sb + outHalf) >> outShift & laneMask
	sg = (sg + outHalf) >> outShift & laneMask
	sr = (sr + outHalf) >> outShift & laneMask
	if rgba {
		sb, sr = sr, sb
	}
	return sb | sg<<8 | sr<<16
}

// convertRows copies rows [y0, y1), columns [x0, x1), of src into dst as
// BGRX, or converts them to RGBA; alpha (or X) is set to 0xff either way.
func convertRows(dst Frame, to Format, src Frame, x0, x1, y0, y1 int) {
	n := (x1 - x0) * bytesPerPixel
	for y := y0; y < y1; y++ {
		s := src.Pix[y*src.Stride+x0*bytesPerPixel:][:n]
		d := dst.Pix[y*dst.Stride+x0*bytesPerPixel:][:n]
		if to == RGBA {
			for i := 0; i < n; i += 4 {
				v := binary.LittleEndian.Uint32(s[i:])
				binary.LittleEndian.PutUint32(d[i:], v>>16&0xff|v&0xff00|(v&0xff)<<16|0xff000000)
			}
			continue
		}
		for i := 0; i < n; i += 4 {
			binary.LittleEndian.PutUint32(d[i:], binary.LittleEndian.Uint32(s[i:])|0xff000000)
		}
	}
}
