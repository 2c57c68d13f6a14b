package jpegenc

import "math"

const (
	blockDim  = 8
	blockSize = blockDim * blockDim

	// sampleShift is the fixed-point precision of the samples the DCT
	// gets: colour conversion hands them over times 4 (2 fraction bits),
	// so the integer transform's roundings stay well below one unit of the
	// finest quantiser step.
	sampleShift = 2

	// dctBits is the fraction of the DCT's fixed-point multipliers. With
	// samples of at most 2^9 (times 4) the largest product stays below
	// 2^29, so 13 bits leave int32 headroom as well.
	dctBits = 13

	// recipBits is the fraction of the quantisers' reciprocals: a
	// coefficient (< 2^17) times a reciprocal (< 2^(recipBits-1)) fits an
	// int64 with room, and 2^-20 is far below the rounding that matters.
	recipBits = 20

	// maxAC, minDC and maxDC bound quantised coefficients to what the
	// Annex K tables code for 8-bit samples: AC categories up to 10, DC
	// differences (at most maxDC-minDC = 2047) up to 11. Exact arithmetic
	// never exceeds them (|AC| < 930, DC in -1024..1016); they catch
	// fixed-point rounding at quality 100.
	maxAC = 1<<10 - 1
	minDC = -1 << 10
	maxDC = 1<<10 - 1
)

// Fixed-point multipliers of the Arai-Agui-Nakajima factorisation of the
// 8-point DCT (Pennebaker & Mitchell, JPEG, section 4.3.5): with them the
// transform needs 5 multiplications per row, and the scale each output is
// left with is folded into the quantiser (see quantizer).
var (
	fixC4   = fixed(math.Cos(4 * math.Pi / 16))                      // 0.707106781
	fixC6   = fixed(math.Cos(6 * math.Pi / 16))                      // 0.382683433
	fixC2m6 = fixed(math.Cos(2*math.Pi/16) - math.Cos(6*math.Pi/16)) // 0.541196100
	fixC2p6 = fixed(math.Cos(2*math.Pi/16) + math.Cos(6*math.Pi/16)) // 1.306562965
)

func fixed(x float64) int { return int(math.Round(x * (1 << dctBits))) }

// mul multiplies by a fixed-point constant, rounding to nearest.
func mul(x, c int) int { return (x*c + 1<<(dctBits-1)) >> dctBits }

// fdct transforms a block of level-shifted samples (times 4) in place.
// Output k (row u, column v) is the T.81 A.3.3 coefficient times
// 8*4*aan(u)*aan(v), where aan(0) = 1 and aan(k) = sqrt(2)*cos(k*pi/16).
func fdct(b *[blockSize]int32) {
	for r := 0; r < blockSize; r += blockDim {
		p := (*[blockDim]int32)(b[r:])
		o0, o1, o2, o3, o4, o5, o6, o7 := fdct1(int(p[0]), int(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6]), int(p[7]))
		p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7] = int32(o0), int32(o1), int32(o2), int32(o3), int32(o4), int32(o5), int32(o6), int32(o7)
	}
	fdctColumns(b)
}

// fdctPlane is fdct of the 8x8 block at off in a 16x16 luma plane, into b.
func fdctPlane(b *[blockSize]int32, plane *[mcuDim * mcuDim]int32, off int) {
	for r := range blockDim {
		p := (*[blockDim]int32)(plane[off+r*mcuDim:])
		q := (*[blockDim]int32)(b[r*blockDim:])
		o0, o1, o2, o3, o4, o5, o6, o7 := fdct1(int(p[0]), int(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6]), int(p[7]))
		q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7] = int32(o0), int32(o1), int32(o2), int32(o3), int32(o4), int32(o5), int32(o6), int32(o7)
	}
	fdctColumns(b)
}

func fdctColumns(b *[blockSize]int32) {
	for c := range blockDim {
		o0, o1, o2, o3, o4, o5, o6, o7 := fdct1(int(b[c]), int(b[c+8]), int(b[c+16]), int(b[c+24]), int(b[c+32]), int(b[c+40]), int(b[c+48]), int(b[c+56]))
		b[c], b[c+8], b[c+16], b[c+24], b[c+32], b[c+40], b[c+48], b[c+56] = int32(o0), int32(o1), int32(o2), int32(o3), int32(o4), int32(o5), int32(o6), int32(o7)
	}
}

// fdct1 is the scaled 8-point AAN DCT: butterflies, then an even half
// (outputs 0, 2, 4, 6) and an odd half (1, 3, 5, 7) with a shared
// rotation.
func fdct1(d0, d1, d2, d3, d4, d5, d6, d7 int) (o0, o1, o2, o3, o4, o5, o6, o7 int) {
	s07, t07 := d0+d7, d0-d7
	s16, t16 := d1+d6, d1-d6
	s25, t25 := d2+d5, d2-d5
	s34, t34 := d3+d4, d3-d4

	// Even half: a 4-point DCT of the sums.
	e0, e3 := s07+s34, s07-s34
	e1, e2 := s16+s25, s16-s25
	o0, o4 = e0+e1, e0-e1
	z := mul(e2+e3, fixC4)
	o2, o6 = e3+z, e3-z

	// Odd half.
	a := t34 + t25
	b := t25 + t16
	c := t16 + t07
	rot := mul(a-c, fixC6)
	za := mul(a, fixC2m6) + rot
	zc := mul(c, fixC2p6) + rot
	zb := mul(b, fixC4)
	p, m := t07+zb, t07-zb
	o5, o3 = m+za, m-za
	o1, o7 = p+zc, p-zc
	return
}

// aanScale is aan(k) of fdct's output scale.
func aanScale(k int) float64 {
	if k == 0 {
		return 1
	}
	return math.Sqrt2 * math.Cos(float64(k)*math.Pi/16)
}

// quantizer holds one table's reciprocals in zig-zag order, so quantising
// is a multiply and a shift, and its output is already in the order the
// entropy coder reads.
type quantizer [blockSize]int

func newQuantizer(q *[blockSize]uint8) quantizer {
	var z quantizer
	for k, n := range zigzag {
		u, v := int(n)/blockDim, int(n)%blockDim
		div := float64(q[n]) * aanScale(u) * aanScale(v) * blockDim * (1 << sampleShift)
		z[k] = int(math.Round((1 << recipBits) / div))
	}
	return z
}

// quantize divides fdct's output by the quantiser, rounding to nearest
// (ties upwards, which makes no measurable difference to symmetric
// rounding), into zig-zag order. The answer's bit k is set when AC
// coefficient k is not zero, which lets the entropy coder jump over runs
// of zeros. The entropy coder clamps the rare AC coefficient that needs
// more than the 10 bits Annex K codes.
func quantize(out *[blockSize]int32, in *[blockSize]int32, q *quantizer) uint64 {
	var nz uint64
	for k := blockSize - 1; k > 0; k-- {
		v := (int(in[zigzag[k]&(blockSize-1)])*q[k] + 1<<(recipBits-1)) >> recipBits
		out[k] = int32(v)
		nz = nz<<1 | uint64(v|-v)>>63 // branch-free: which are zero is unpredictable
	}
	dc := (int(in[0])*q[0] + 1<<(recipBits-1)) >> recipBits
	out[0] = int32(min(max(dc, minDC), maxDC))
	return nz << 1
}

// scaledQuant scales an Annex K table for a quality of 1-100 the way the
// Independent JPEG Group's software does (and so what users of "quality"
// expect): 50 keeps the table, 100 makes every step 1, lower qualities
// grow the steps up to 50 times.
func scaledQuant(base *[blockSize]uint8, quality int) [blockSize]uint8 {
	scale := 200 - 2*quality
	if quality < 50 {
		scale = 5000 / quality
	}
	var q [blockSize]uint8
	for i, b := range base {
		q[i] = uint8(min(max((int(b)*scale+50)/100, 1), 255))
	}
	return q
}
