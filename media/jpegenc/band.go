package jpegenc

// Fixed-point (16-bit fraction) colour conversion of JFIF section 7 /
// ITU-R BT.601: Y = 0.299 R + 0.587 G + 0.114 B, Cb = (B - Y) / 1.772,
// Cr = (R - Y) / 1.402. Each row of weights sums to 2^16 (Y) or 0 (Cb,
// Cr), so grey stays exactly grey.
const (
	yR, yG, yB    = 19595, 38470, 7471
	cbR, cbG, cbB = -11059, -21709, 32768
	crR, crG, crB = 32768, -27439, -5329
)

// mcuBytes is one row of an MCU's pixels.
const mcuBytes = mcuDim * bytesPerPixel

// mcu holds one 16x16 block of pixels as a plane of luma and the 2x2-
// averaged chroma blocks, all level-shifted and times 4 (sampleShift).
type mcu struct {
	y      [mcuDim * mcuDim]int32
	cb, cr [blockSize]int32
}

// load fills m from 16 rows of 16 pixels; the caller replicates the last
// row and column into them at the image's edges. ri and bi are the byte
// offsets of red and blue within a pixel.
func (m *mcu) load(rows *[mcuDim]*[mcuBytes]byte, ri, bi int) {
	ri &= 3
	bi &= 3
	for cy := range blockDim {
		top, bot := rows[2*cy], rows[2*cy+1]
		ytop := (*[mcuDim]int32)(m.y[2*cy*mcuDim:])
		ybot := (*[mcuDim]int32)(m.y[(2*cy+1)*mcuDim:])
		cb := (*[blockDim]int32)(m.cb[cy*blockDim:])
		cr := (*[blockDim]int32)(m.cr[cy*blockDim:])
		for cx := range blockDim {
			x := 2 * cx
			t := (*[2 * bytesPerPixel]byte)(top[x*bytesPerPixel:])
			b := (*[2 * bytesPerPixel]byte)(bot[x*bytesPerPixel:])
			r00, g00, b00 := int32(t[ri]), int32(t[1]), int32(t[bi])
			r01, g01, b01 := int32(t[4+ri]), int32(t[5]), int32(t[4+bi])
			r10, g10, b10 := int32(b[ri]), int32(b[1]), int32(b[bi])
			r11, g11, b11 := int32(b[4+ri]), int32(b[5]), int32(b[4+bi])

			// Y times 4: shift by 14 rather than 16, then level-shift by 128*4.
			const ySh, yLevel = 16 - sampleShift, 128 << sampleShift
			yt := (*[2]int32)(ytop[x:])
			yb := (*[2]int32)(ybot[x:])
			yt[0] = (yR*r00+yG*g00+yB*b00+1<<(ySh-1))>>ySh - yLevel
			yt[1] = (yR*r01+yG*g01+yB*b01+1<<(ySh-1))>>ySh - yLevel
			yb[0] = (yR*r10+yG*g10+yB*b10+1<<(ySh-1))>>ySh - yLevel
			yb[1] = (yR*r11+yG*g11+yB*b11+1<<(ySh-1))>>ySh - yLevel

			// The chroma of the sum of 4 pixels is 4 times their average's:
			// the times-4 precision comes for free. The level shift of 128
			// cancels Cb's and Cr's offset of 128.
			rs, gs, bs := r00+r01+r10+r11, g00+g01+g10+g11, b00+b01+b10+b11
			cb[cx] = (cbR*rs + cbG*gs + cbB*bs + 1<<15) >> 16
			cr[cx] = (crR*rs + crG*gs + crB*bs + 1<<15) >> 16
		}
	}
}

// encodeBand codes MCU rows [r0, r1) of img with its own DC predictions
// (a restart interval starts with them at zero, F.1.2.1) and, when rst is
// not negative, ends with the padding and marker RST<rst> that start the
// next interval.
func encodeBand(buf []byte, img *Image, t *tables, r0, r1, rst int) []byte {
	w := bitWriter{buf: buf}
	ri, bi := 0, 2
	if img.Format == BGRX {
		ri, bi = 2, 0
	}
	var (
		m             mcu
		blk, zz       [blockSize]int32
		dcY, dcB, dcR int32
		rows          [mcuDim][]byte
		in            [mcuDim]*[mcuBytes]byte
		edge          [mcuDim][mcuBytes]byte // an MCU that crosses the right edge
	)
	rowBytes := img.Width * bytesPerPixel
	for r := r0; r < r1; r++ {
		for i := range rows {
			y := min(r*mcuDim+i, img.Height-1)
			rows[i] = img.Pix[y*img.Stride : y*img.Stride+rowBytes]
		}
		for x0 := 0; x0 < rowBytes; x0 += mcuBytes {
			if x0+mcuBytes <= rowBytes {
				for i, row := range rows {
					in[i] = (*[mcuBytes]byte)(row[x0:])
				}
			} else {
				for i, row := range rows {
					n := copy(edge[i][:], row[x0:])
					for j := n; j < mcuBytes; j += bytesPerPixel {
						copy(edge[i][j:j+bytesPerPixel], row[rowBytes-bytesPerPixel:])
					}
					in[i] = &edge[i]
				}
			}
			m.load(&in, ri, bi)
			for b := range 4 {
				off := (b>>1)*blockDim*mcuDim + (b&1)*blockDim
				nz := uint64(0)
				if flatPlane(&m.y, off) {
					zz[0] = flatDC(m.y[off], &t.lumaR)
				} else {
					fdctPlane(&blk, &m.y, off)
					nz = quantize(&zz, &blk, &t.lumaR)
				}
				w.encodeBlock(&zz, nz, &dcY, t.dcY, t.acY)
			}
			for c, dc := range [2]*int32{&dcB, &dcR} {
				blk := &m.cb
				if c == 1 {
					blk = &m.cr
				}
				nz := uint64(0)
				if flat(blk) {
					zz[0] = flatDC(blk[0], &t.chromaR)
				} else {
					fdct(blk)
					nz = quantize(&zz, blk, &t.chromaR)
				}
				w.encodeBlock(&zz, nz, dc, t.dcC, t.acC)
			}
		}
	}
	w.align()
	if rst >= 0 {
		w.buf = append(w.buf, 0xff, byte(markerRST0+rst))
	}
	return w.buf
}

// Blocks of one colour are common in screenshots (backgrounds, window
// fills); their DCT is the DC term alone, found without the transform.

// flat reports whether every sample of b is the same. It stops at the
// first row that differs, so busy blocks pay little for the question.
func flat(b *[blockSize]int32) bool {
	first := b[0]
	for r := 0; r < blockSize; r += blockDim {
		var d int32
		for _, v := range (*[blockDim]int32)(b[r:]) {
			d |= v ^ first
		}
		if d != 0 {
			return false
		}
	}
	return true
}

// flatPlane is flat for the 8x8 block at off in a 16x16 luma plane.
func flatPlane(p *[mcuDim * mcuDim]int32, off int) bool {
	first := p[off]
	for r := range blockDim {
		var d int32
		for _, v := range (*[blockDim]int32)(p[off+r*mcuDim:]) {
			d |= v ^ first
		}
		if d != 0 {
			return false
		}
	}
	return true
}

// flatDC is the quantised DC of a block whose samples are all s: fdct
// would output 64*s (8 per pass) there and zero everywhere else.
func flatDC(s int32, q *quantizer) int32 {
	dc := (int(s)*blockSize*q[0] + 1<<(recipBits-1)) >> recipBits
	return int32(min(max(dc, minDC), maxDC))
}
