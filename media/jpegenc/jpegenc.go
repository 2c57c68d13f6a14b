// Package jpegenc is a baseline JPEG encoder (ITU T.81, JFIF) for
// screenshots: it reads 32-bit RGBA or BGRX pixels as they come from a
// capture, converts them to YCbCr 4:2:0 one 16x16 block at a time, and
// codes horizontal bands of the frame on their own goroutines, joined by
// restart markers, so a 1080p frame encodes in a fraction of the time
// image/jpeg takes. It always uses the Annex K tables.
package jpegenc

import (
	"encoding/binary"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/trycua/cua-spacesd/api"
)

const (
	// DefaultQuality is the quality when Options.Quality is 0.
	DefaultQuality = 75
	// MinQuality and MaxQuality bound Options.Quality; Encode rejects a
	// quality outside them with an invalid_argument error rather than
	// clamping, so a caller's mistake is seen.
	MinQuality = 1
	MaxQuality = 100

	// MaxSide is the largest width or height: SOF0 stores each in 16 bits.
	MaxSide = 65535

	// mcuDim is the side of a minimum coded unit: with 4:2:0 subsampling
	// a 16x16 block of pixels gives 4 luma and 2 chroma blocks.
	mcuDim = 16

	// maxRestartInterval is the largest DRI value (16 bits): a band's MCUs
	// between two restart markers may not exceed it.
	maxRestartInterval = 65535

	// minParallelPixels is the frame size from which the encoder splits
	// into bands: below it goroutines and restart markers cost more than
	// they save.
	minParallelPixels = 128 * 1024

	// bandsPerProc is how many bands each core gets by default: more
	// than one evens out bands of unequal content (a flat desktop
	// background codes far faster than a photo).
	bandsPerProc = 2

	// bytesPerPixel is the size of an RGBA or BGRX pixel.
	bytesPerPixel = 4
)

// PixelFormat is the byte order of a 4-byte pixel in memory.
type PixelFormat uint8

const (
	// RGBA is image.RGBA's layout: R, G, B, then alpha (ignored).
	RGBA PixelFormat = iota
	// BGRX is the X server's 24/32-bit little-endian ZPixmap layout:
	// B, G, R, then a byte that is ignored.
	BGRX
)

// Image is a frame of 4-byte pixels; row y starts at Pix[y*Stride].
type Image struct {
	Pix           []byte
	Stride        int
	Width, Height int
	Format        PixelFormat
}

// Options adjust an encoding; the zero value is DefaultQuality with bands
// chosen for the machine.
type Options struct {
	// Quality is 1-100 (0 = DefaultQuality).
	Quality int
	// Bands is how many bands to code in parallel (0 = chosen from
	// GOMAXPROCS and the frame size; 1 = one goroutine, no restart
	// markers). It is an upper bound: a band is at least one MCU row.
	Bands int
}

// Encoder encodes frames, reusing band buffers between calls so a stream
// of screenshots does not allocate a frame's worth each time. The zero
// value is ready; an Encoder is safe for concurrent use.
type Encoder struct {
	bufs sync.Pool              // *[]byte, one band's entropy-coded data
	last atomic.Pointer[tables] // the previous call's, reused at the same quality
}

// Encode writes img as a JPEG to w.
func (e *Encoder) Encode(w io.Writer, img Image, o Options) error {
	b, err := e.Append(nil, img, o)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Append appends img as a JPEG file to dst and returns the extended
// slice. When dst lacks room it allocates once, exactly the file's size.
func (e *Encoder) Append(dst []byte, img Image, o Options) ([]byte, error) {
	if err := check(img, &o); err != nil {
		return nil, err
	}
	mcuCols := (img.Width + mcuDim - 1) / mcuDim
	mcuRows := (img.Height + mcuDim - 1) / mcuDim
	bands := o.Bands
	if bands == 0 {
		bands = 1
		if img.Width*img.Height >= minParallelPixels {
			bands = runtime.GOMAXPROCS(0) * bandsPerProc
		}
	}
	rowsPerBand := (mcuRows + bands - 1) / bands
	rowsPerBand = min(max(rowsPerBand, 1), maxRestartInterval/mcuCols)
	bands = (mcuRows + rowsPerBand - 1) / rowsPerBand
	restart := 0
	if bands > 1 {
		restart = rowsPerBand * mcuCols
	}

	t := e.last.Load()
	if t == nil || t.quality != o.Quality {
		t = newTables(o.Quality)
		e.last.Store(t)
	}
	out := make([]*[]byte, bands)
	var wg sync.WaitGroup
	for i := range bands {
		buf := e.buffer()
		out[i] = buf
		r0 := i * rowsPerBand
		r1 := min(r0+rowsPerBand, mcuRows)
		// The last band runs here: one goroutine fewer to start and wait for.
		if i == bands-1 {
			*buf = encodeBand((*buf)[:0], &img, t, r0, r1, -1)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			*buf = encodeBand((*buf)[:0], &img, t, r0, r1, i%8)
		}()
	}
	wg.Wait()

	size := headerSize(restart != 0) + 2
	for _, b := range out {
		size += len(*b)
	}
	if cap(dst)-len(dst) < size {
		d := make([]byte, len(dst), len(dst)+size)
		copy(d, dst)
		dst = d
	}
	dst = appendHeader(dst, img.Width, img.Height, t, restart)
	for _, b := range out {
		dst = append(dst, *b...)
		e.bufs.Put(b)
	}
	return append(dst, 0xff, markerEOI), nil
}

func (e *Encoder) buffer() *[]byte {
	if b, ok := e.bufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// check validates img and o, and sets o's default quality.
func check(img Image, o *Options) error {
	if o.Quality == 0 {
		o.Quality = DefaultQuality
	}
	switch {
	case o.Quality < MinQuality || o.Quality > MaxQuality:
		return api.Errorf(api.KindInvalidArgument, "jpeg quality %d is out of range %d-%d", o.Quality, MinQuality, MaxQuality)
	case o.Bands < 0:
		return api.Errorf(api.KindInvalidArgument, "jpeg bands %d is negative", o.Bands)
	case img.Width < 1 || img.Height < 1 || img.Width > MaxSide || img.Height > MaxSide:
		return api.Errorf(api.KindInvalidArgument, "jpeg image %dx%d: each side must be 1-%d", img.Width, img.Height, MaxSide)
	case img.Format != RGBA && img.Format != BGRX:
		return api.Errorf(api.KindInvalidArgument, "jpeg pixel format %d is unknown", img.Format)
	case img.Stride < img.Width*bytesPerPixel:
		return api.Errorf(api.KindInvalidArgument, "jpeg image stride %d is below width %d x %d bytes", img.Stride, img.Width, bytesPerPixel)
	case img.Height > 1 && img.Stride > len(img.Pix), // and so (Height-1)*Stride cannot overflow below
		len(img.Pix) < (img.Height-1)*img.Stride+img.Width*bytesPerPixel:
		return api.Errorf(api.KindInvalidArgument, "jpeg image of %dx%d (stride %d) needs %d bytes of pixels, got %d",
			img.Width, img.Height, img.Stride, (img.Height-1)*img.Stride+img.Width*bytesPerPixel, len(img.Pix))
	}
	return nil
}

// tables are everything one encoding's blocks share.
type tables struct {
	quality            int
	lumaQ, chromaQ     [blockSize]uint8 // as DQT writes them (natural order)
	lumaR, chromaR     quantizer
	dcY, acY, dcC, acC *huffTable
}

// stdHuff are the Annex K tables as codes, built once: they never change.
var stdHuff = func() (t [4]huffTable) {
	for i, s := range stdHuffSpecs {
		t[i] = buildHuffTable(s)
	}
	return t
}()

func newTables(quality int) *tables {
	t := &tables{
		quality: quality,
		lumaQ:   scaledQuant(&lumaQuant, quality),
		chromaQ: scaledQuant(&chromaQuant, quality),
		dcY:     &stdHuff[0], acY: &stdHuff[1], dcC: &stdHuff[2], acC: &stdHuff[3],
	}
	t.lumaR = newQuantizer(&t.lumaQ)
	t.chromaR = newQuantizer(&t.chromaQ)
	return t
}

// Markers (T.81 Table B.1).
const (
	markerSOI  = 0xd8
	markerEOI  = 0xd9
	markerAPP0 = 0xe0
	markerDQT  = 0xdb
	markerSOF0 = 0xc0
	markerDHT  = 0xc4
	markerDRI  = 0xdd
	markerSOS  = 0xda
	markerRST0 = 0xd0
)

// jfifAPP0 is a JFIF 1.01 header without a thumbnail: it tells viewers
// the three components are YCbCr.
var jfifAPP0 = []byte{0xff, markerAPP0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}

// Segment sizes, markers included.
const (
	sizeSOI = 2
	sizeDQT = 4 + 2*(1+blockSize)
	sizeSOF = 4 + 6 + 3*3
	sizeDRI = 6
	sizeSOS = 4 + 1 + 3*2 + 3
)

func sizeDHT() int {
	n := 4
	for _, s := range stdHuffSpecs {
		n += 1 + 16 + len(s.values)
	}
	return n
}

func headerSize(restarts bool) int {
	n := sizeSOI + len(jfifAPP0) + sizeDQT + sizeSOF + sizeDHT() + sizeSOS
	if restarts {
		n += sizeDRI
	}
	return n
}

// appendHeader writes everything before the entropy-coded data: SOI,
// JFIF, both quantisation tables, the frame (Y sampled 2x2, Cb and Cr
// 1x1), the four Huffman tables, the restart interval and the scan.
func appendHeader(b []byte, w, h int, t *tables, restart int) []byte {
	b = append(b, 0xff, markerSOI)
	b = append(b, jfifAPP0...)

	b = append(b, 0xff, markerDQT)
	b = binary.BigEndian.AppendUint16(b, sizeDQT-2)
	for id, q := range []*[blockSize]uint8{&t.lumaQ, &t.chromaQ} {
		b = append(b, byte(id)) // 8-bit precision, table id
		for _, n := range zigzag {
			b = append(b, q[n])
		}
	}

	b = append(b, 0xff, markerSOF0)
	b = binary.BigEndian.AppendUint16(b, sizeSOF-2)
	b = append(b, 8) // sample precision
	b = binary.BigEndian.AppendUint16(b, uint16(h))
	b = binary.BigEndian.AppendUint16(b, uint16(w))
	b = append(b, 3,
		1, 0x22, 0, // Y: 2x2 sampling, quantiser 0
		2, 0x11, 1, // Cb
		3, 0x11, 1) // Cr

	b = append(b, 0xff, markerDHT)
	b = binary.BigEndian.AppendUint16(b, uint16(sizeDHT()-2))
	for i, s := range stdHuffSpecs {
		class := byte(i%2) << 4 // DC 0, AC 1
		b = append(b, class|byte(i/2))
		b = append(b, s.counts[:]...)
		b = append(b, s.values...)
	}

	if restart != 0 {
		b = append(b, 0xff, markerDRI, 0, 4)
		b = binary.BigEndian.AppendUint16(b, uint16(restart))
	}

	b = append(b, 0xff, markerSOS)
	b = binary.BigEndian.AppendUint16(b, sizeSOS-2)
	return append(b, 3,
		1, 0x00, // Y: DC table 0, AC table 0
		2, 0x11, // Cb: tables 1
		3, 0x11, // Cr
		0, 63, 0) // spectral selection 0-63, no successive approximation
}
