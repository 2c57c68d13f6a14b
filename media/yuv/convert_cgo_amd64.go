//go:build cgo

package yuv

/*
#include <stdint.h>
#include <immintrin.h>

// The fixed point of yuv.go's lumaOf and chromaOf, for the columns the
// vector loop leaves over.
static inline uint8_t luma1(int r, int g, int b) { return (uint8_t)(((66*r + 129*g + 25*b + 128) >> 8) + 16); }

static inline void chroma1(int r, int g, int b, uint8_t *u, uint8_t *v) {
	*u = (uint8_t)(((-38*r - 74*g + 112*b + 512) >> 10) + 128);
	*v = (uint8_t)(((112*r - 94*g - 18*b + 512) >> 10) + 128);
}

// luma32 is lumaOf of 32 pixels (four registers of eight), stored at y.
// maddubs gives 25B - 127G and 66R per pixel (129 does not fit its signed
// bytes); adding the pixel's own G << 8 makes 25B + 129G. Every sum stays
// below 2^16, and add and hadd wrap 16-bit lanes, so unsigned 16-bit
// arithmetic is exact here.
__attribute__((target("avx2")))
static inline void luma32(const __m256i p[4], uint8_t *y) {
	const __m256i coef = _mm256_set1_epi32(0x00428119); // bytes 25, -127, 66, 0
	const __m256i gmask = _mm256_set1_epi32(0x0000ff00);
	const __m256i round = _mm256_set1_epi16(128), offset = _mm256_set1_epi16(16);
	__m256i s[4];
	for (int k = 0; k < 4; k++)
		s[k] = _mm256_add_epi16(_mm256_maddubs_epi16(p[k], coef), _mm256_and_si256(p[k], gmask));
	// hadd works within 128-bit lanes: pixels 0-3, 8-11 | 4-7, 12-15.
	__m256i a = _mm256_hadd_epi16(s[0], s[1]), b = _mm256_hadd_epi16(s[2], s[3]);
	a = _mm256_add_epi16(_mm256_srli_epi16(_mm256_add_epi16(a, round), 8), offset);
	b = _mm256_add_epi16(_mm256_srli_epi16(_mm256_add_epi16(b, round), 8), offset);
	// Groups of four pixels as dwords: 0, 8, 16, 24, 4, 12, 20, 28.
	__m256i out = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	_mm256_storeu_si256((__m256i *)y, out);
}

// sums4 adds the channels of 2x2 blocks of eight pixels of two rows: four
// blocks, each as 16-bit B, G, R, X sums in a qword, in order within the
// register's lanes (blocks 0, 1 | 2, 3).
__attribute__((target("avx2")))
static inline __m256i sums4(__m256i top, __m256i bot) {
	const __m256i zero = _mm256_setzero_si256();
	__m256i lo = _mm256_add_epi16(_mm256_unpacklo_epi8(top, zero), _mm256_unpacklo_epi8(bot, zero)); // pixels 0, 1 | 4, 5
	__m256i hi = _mm256_add_epi16(_mm256_unpackhi_epi8(top, zero), _mm256_unpackhi_epi8(bot, zero)); // pixels 2, 3 | 6, 7
	lo = _mm256_add_epi16(lo, _mm256_srli_si256(lo, 8));
	hi = _mm256_add_epi16(hi, _mm256_srli_si256(hi, 8));
	return _mm256_unpacklo_epi64(lo, hi);
}

// chroma16 is chromaOf of 16 blocks of sums (four registers of sums4),
// stored at u and v, in 32-bit lanes: 112 x 1020 does not fit 16 bits.
__attribute__((target("avx2")))
static inline void chroma16(const __m256i s[4], uint8_t *u, uint8_t *v) {
	const __m256i cu = _mm256_setr_epi16(112, -74, -38, 0, 112, -74, -38, 0, 112, -74, -38, 0, 112, -74, -38, 0);
	const __m256i cv = _mm256_setr_epi16(-18, -94, 112, 0, -18, -94, 112, 0, -18, -94, 112, 0, -18, -94, 112, 0);
	const __m256i round = _mm256_set1_epi32(512), offset = _mm256_set1_epi32(128);
	// hadd within lanes: blocks 0, 1, 4, 5 | 2, 3, 6, 7 (and 8-15 alike).
	__m256i u0 = _mm256_hadd_epi32(_mm256_madd_epi16(s[0], cu), _mm256_madd_epi16(s[1], cu));
	__m256i u1 = _mm256_hadd_epi32(_mm256_madd_epi16(s[2], cu), _mm256_madd_epi16(s[3], cu));
	__m256i v0 = _mm256_hadd_epi32(_mm256_madd_epi16(s[0], cv), _mm256_madd_epi16(s[1], cv));
	__m256i v1 = _mm256_hadd_epi32(_mm256_madd_epi16(s[2], cv), _mm256_madd_epi16(s[3], cv));
#define FINISH(x) _mm256_add_epi32(_mm256_srai_epi32(_mm256_add_epi32((x), round), 10), offset)
	__m256i uw = _mm256_packs_epi32(FINISH(u0), FINISH(u1)); // 0 1 4 5 8 9 12 13 | 2 3 6 7 10 11 14 15
	__m256i vw = _mm256_packs_epi32(FINISH(v0), FINISH(v1));
#undef FINISH
	// Bytes: u's then v's halves of each lane; dwords to u | v, then the
	// pairs of blocks into order.
	__m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(uw, vw), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	b = _mm256_shuffle_epi8(b, _mm256_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15,
		0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15));
	_mm_storeu_si128((__m128i *)u, _mm256_castsi256_si128(b));
	_mm_storeu_si128((__m128i *)v, _mm256_extracti128_si256(b, 1));
}

// yuv_convert_rect_avx2 is yuv.go's convertRect: the rectangle [x0, x1) x
// [y0, y1), x0 and y0 even, of a width x height frame, two rows at a time
// (an odd height repeats its last row), 32 pixels at a time where it can.
__attribute__((target("avx2")))
static void yuv_convert_rect_avx2(const uint8_t *src, long sstride, int width, int height,
		uint8_t *Y, long ystride, uint8_t *U, uint8_t *V, long cstride,
		int x0, int y0, int x1, int y1) {
	for (int y = y0; y < y1; y += 2) {
		int yb = y + 1 < height ? y + 1 : height - 1;
		const uint8_t *top = src + y * sstride, *bot = src + yb * sstride;
		uint8_t *ytop = Y + y * ystride, *ybot = Y + yb * ystride;
		uint8_t *u = U + (y / 2) * cstride, *v = V + (y / 2) * cstride;
		int x = x0;
		for (; x + 32 <= x1 && x + 32 <= width; x += 32) {
			__m256i t[4], b[4], s[4];
			for (int k = 0; k < 4; k++) {
				t[k] = _mm256_loadu_si256((const __m256i *)(top + 4 * (x + 8 * k)));
				b[k] = _mm256_loadu_si256((const __m256i *)(bot + 4 * (x + 8 * k)));
				s[k] = sums4(t[k], b[k]);
			}
			luma32(t, ytop + x);
			luma32(b, ybot + x);
			chroma16(s, u + x / 2, v + x / 2);
		}
		for (; x + 2 <= x1 && x + 2 <= width; x += 2) {
			const uint8_t *t = top + 4 * x, *b = bot + 4 * x;
			ytop[x] = luma1(t[2], t[1], t[0]);
			ytop[x + 1] = luma1(t[6], t[5], t[4]);
			ybot[x] = luma1(b[2], b[1], b[0]);
			ybot[x + 1] = luma1(b[6], b[5], b[4]);
			chroma1(t[2] + t[6] + b[2] + b[6], t[1] + t[5] + b[1] + b[5], t[0] + t[4] + b[0] + b[4], &u[x / 2], &v[x / 2]);
		}
		if (x < x1) { // the last column of an odd width stands for the missing one
			const uint8_t *t = top + 4 * x, *b = bot + 4 * x;
			ytop[x] = luma1(t[2], t[1], t[0]);
			ybot[x] = luma1(b[2], b[1], b[0]);
			chroma1(2 * (t[2] + b[2]), 2 * (t[1] + b[1]), 2 * (t[0] + b[0]), &u[x / 2], &v[x / 2]);
		}
	}
}
*/
import "C"

import (
	"image"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// accelerated says convertRect has the AVX2 loop: 8 to 10 times the pure
// Go one, which took a quarter of a core for a 1080p stream at 30 fps.
var accelerated = cpu.X86.HasAVX2

// convertRectAccel is convertRect in AVX2; the caller has checked the
// sizes (check) and made r even (even), as for convertRect.
func convertRectAccel(dst *Image, src BGRX, r image.Rectangle) {
	C.yuv_convert_rect_avx2((*C.uint8_t)(unsafe.Pointer(&src.Pix[0])), C.long(src.Stride), C.int(src.Width), C.int(src.Height),
		(*C.uint8_t)(unsafe.Pointer(&dst.Y[0])), C.long(dst.YStride),
		(*C.uint8_t)(unsafe.Pointer(&dst.U[0])), (*C.uint8_t)(unsafe.Pointer(&dst.V[0])), C.long(dst.CStride),
		C.int(r.Min.X), C.int(r.Min.Y), C.int(r.Max.X), C.int(r.Max.Y))
}
