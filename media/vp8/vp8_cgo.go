//go:build cgo

package vp8

/*
#cgo LDFLAGS: -lvpx -lm -lpthread
#include <stdlib.h>
#include <string.h>
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

typedef struct {
	vpx_codec_ctx_t codec;
	vpx_codec_enc_cfg_t cfg;
	vpx_image_t img;
	unsigned char *buf;
	// The frame just encoded, copied out of libvpx's packets.
	unsigned char *out;
	size_t out_len, out_cap;
	int key;
} enc_t;

static const char *enc_error(enc_t *e) {
	const char *d = vpx_codec_error_detail(&e->codec);
	return d ? d : vpx_codec_error(&e->codec);
}

static int enc_open(enc_t *e, int w, int h, int kbps, int threads, int cpu_used) {
	vpx_codec_err_t err = vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &e->cfg, 0);
	if (err) return err;
	e->cfg.g_w = w;
	e->cfg.g_h = h;
	e->cfg.g_timebase.num = 1;
	e->cfg.g_timebase.den = 1000; // pts in milliseconds
	e->cfg.g_threads = threads;
	e->cfg.g_lag_in_frames = 0;   // every frame out as it goes in
	e->cfg.g_error_resilient = VPX_ERROR_RESILIENT_DEFAULT;
	e->cfg.g_pass = VPX_RC_ONE_PASS;
	e->cfg.rc_end_usage = VPX_CBR;
	e->cfg.rc_target_bitrate = kbps;
	e->cfg.rc_min_quantizer = 4;
	e->cfg.rc_max_quantizer = 56;
	e->cfg.rc_undershoot_pct = 100;
	e->cfg.rc_overshoot_pct = 15;
	e->cfg.rc_buf_initial_sz = 500;
	e->cfg.rc_buf_optimal_sz = 600;
	e->cfg.rc_buf_sz = 1000;
	e->cfg.rc_dropframe_thresh = 0; // a changed screen is always sent
	e->cfg.kf_mode = VPX_KF_DISABLED; // keyframes on demand (join, PLI, FIR)
	err = vpx_codec_enc_init(&e->codec, vpx_codec_vp8_cx(), &e->cfg, 0);
	if (err) return err;
	vpx_codec_control(&e->codec, VP8E_SET_CPUUSED, cpu_used);
	vpx_codec_control(&e->codec, VP8E_SET_NOISE_SENSITIVITY, 0);
	vpx_codec_control(&e->codec, VP8E_SET_STATIC_THRESHOLD, 1);
	// Screen-content mode stays off: it made a 1080p frame several
	// times slower to encode, for text a little sharper.
	vpx_codec_control(&e->codec, VP8E_SET_SCREEN_CONTENT_MODE, 0);
	vpx_codec_control(&e->codec, VP8E_SET_TOKEN_PARTITIONS, threads > 1 ? VP8_TWO_TOKENPARTITION : VP8_ONE_TOKENPARTITION);
	size_t cw = (w + 1) / 2, ch = (h + 1) / 2;
	e->buf = calloc((size_t)w * h + 2 * cw * ch, 1);
	if (!e->buf) { vpx_codec_destroy(&e->codec); return VPX_CODEC_MEM_ERROR; }
	vpx_img_wrap(&e->img, VPX_IMG_FMT_I420, w, h, 1, e->buf);
	// The wrap's strides and planes, stated as the Go side lays them out.
	e->img.stride[VPX_PLANE_Y] = w;
	e->img.stride[VPX_PLANE_U] = cw;
	e->img.stride[VPX_PLANE_V] = cw;
	e->img.planes[VPX_PLANE_Y] = e->buf;
	e->img.planes[VPX_PLANE_U] = e->buf + (size_t)w * h;
	e->img.planes[VPX_PLANE_V] = e->buf + (size_t)w * h + cw * ch;
	return 0;
}

static int enc_encode(enc_t *e, long long pts, unsigned long duration, int force_key) {
	vpx_enc_frame_flags_t flags = force_key ? VPX_EFLAG_FORCE_KF : 0;
	vpx_codec_err_t err = vpx_codec_encode(&e->codec, &e->img, pts, duration, flags, VPX_DL_REALTIME);
	if (err) return err;
	e->out_len = 0;
	e->key = 0;
	vpx_codec_iter_t iter = NULL;
	const vpx_codec_cx_pkt_t *pkt;
	while ((pkt = vpx_codec_get_cx_data(&e->codec, &iter)) != NULL) {
		if (pkt->kind != VPX_CODEC_CX_FRAME_PKT) continue;
		size_t need = e->out_len + pkt->data.frame.sz;
		if (need > e->out_cap) {
			unsigned char *n = realloc(e->out, need * 2);
			if (!n) return VPX_CODEC_MEM_ERROR;
			e->out = n;
			e->out_cap = need * 2;
		}
		memcpy(e->out + e->out_len, pkt->data.frame.buf, pkt->data.frame.sz);
		e->out_len = need;
		if (pkt->data.frame.flags & VPX_FRAME_IS_KEY) e->key = 1;
	}
	return 0;
}

static int enc_set_bitrate(enc_t *e, int kbps) {
	e->cfg.rc_target_bitrate = kbps;
	return vpx_codec_enc_config_set(&e->codec, &e->cfg);
}

static void enc_close(enc_t *e) {
	vpx_codec_destroy(&e->codec);
	free(e->buf);
	free(e->out);
	free(e);
}

typedef struct {
	vpx_codec_ctx_t codec;
	vpx_image_t *img;
} dec_t;

static int dec_open(dec_t *d) {
	return vpx_codec_dec_init(&d->codec, vpx_codec_vp8_dx(), NULL, 0);
}

static int dec_decode(dec_t *d, const unsigned char *data, unsigned int len) {
	vpx_codec_err_t err = vpx_codec_decode(&d->codec, data, len, NULL, 0);
	if (err) return err;
	vpx_codec_iter_t iter = NULL;
	d->img = vpx_codec_get_frame(&d->codec, &iter);
	return 0;
}

static const char *dec_error(dec_t *d) { return vpx_codec_error(&d->codec); }

static void dec_close(dec_t *d) {
	vpx_codec_destroy(&d->codec);
	free(d);
}
*/
import "C"

import (
	"fmt"
	"image"
	"time"
	"unsafe"

	"github.com/trycua/cua-spacesd/media/yuv"
)

// Available says this build has the encoder.
const Available = true

// Version is libvpx's version string.
func Version() string { return C.GoString(C.vpx_codec_version_str()) }

// Encoder is one libvpx VP8 encoder of a fixed size. It is for one
// goroutine at a time.
type Encoder struct {
	e      *C.enc_t
	img    *yuv.Image
	kbps   int
	closed bool
}

// NewEncoder opens an encoder. Its input image (Image) lives in C memory
// and keeps its pixels between frames, so that a caller updates only what
// changed.
func NewEncoder(o Options) (*Encoder, error) {
	if o.Width < 1 || o.Height < 1 || o.Width > MaxDimension || o.Height > MaxDimension {
		return nil, fmt.Errorf("vp8: size %dx%d is out of range 1-%d", o.Width, o.Height, MaxDimension)
	}
	kbps := clampBitrate(o.BitrateKbps)
	threads := max(o.Threads, 1)
	e := (*C.enc_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.enc_t{}))))
	if e == nil {
		return nil, fmt.Errorf("vp8: out of memory")
	}
	if rc := C.enc_open(e, C.int(o.Width), C.int(o.Height), C.int(kbps), C.int(threads), C.int(cpuUsed)); rc != 0 {
		msg := C.GoString(C.vpx_codec_err_to_string(C.vpx_codec_err_t(rc)))
		C.free(unsafe.Pointer(e))
		return nil, fmt.Errorf("vp8: open a %dx%d encoder: %s", o.Width, o.Height, msg)
	}
	cw, ch := yuv.ChromaSize(o.Width, o.Height)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(e.buf)), o.Width*o.Height+2*cw*ch)
	return &Encoder{e: e, img: yuv.Wrap(buf, o.Width, o.Height), kbps: kbps}, nil
}

func clampBitrate(kbps int) int {
	if kbps == 0 {
		return DefaultBitrateKbps
	}
	return min(max(kbps, MinBitrateKbps), MaxBitrateKbps)
}

// Image is the encoder's input: write the next frame into it, then Encode.
func (e *Encoder) Image() *yuv.Image { return e.img }

// Encode encodes the image as it is now, at pts (the stream's clock),
// shown for duration; key forces a keyframe. The answer's Data is a copy.
func (e *Encoder) Encode(pts, duration time.Duration, key bool) (Encoded, error) {
	if e.closed {
		return Encoded{}, fmt.Errorf("vp8: encoder closed")
	}
	start := time.Now()
	force := C.int(0)
	if key {
		force = 1
	}
	if rc := C.enc_encode(e.e, C.longlong(pts.Milliseconds()), C.ulong(max(1, duration.Milliseconds())), force); rc != 0 {
		return Encoded{}, fmt.Errorf("vp8: encode: %s", C.GoString(C.enc_error(e.e)))
	}
	return Encoded{
		Data: C.GoBytes(unsafe.Pointer(e.e.out), C.int(e.e.out_len)),
		Key:  e.e.key != 0,
		Took: time.Since(start),
	}, nil
}

// SetBitrate changes the target bitrate (clamped to the bounds) from the
// next frame on.
func (e *Encoder) SetBitrate(kbps int) error {
	kbps = clampBitrate(kbps)
	if e.closed || kbps == e.kbps {
		return nil
	}
	if rc := C.enc_set_bitrate(e.e, C.int(kbps)); rc != 0 {
		return fmt.Errorf("vp8: set bitrate %d kbit/s: %s", kbps, C.GoString(C.enc_error(e.e)))
	}
	e.kbps = kbps
	return nil
}

// Bitrate is the current target in kbit/s.
func (e *Encoder) Bitrate() int { return e.kbps }

// Close frees the encoder and its image.
func (e *Encoder) Close() {
	if e.closed {
		return
	}
	e.closed = true
	C.enc_close(e.e)
	e.img = nil
}

// Decoder decodes a VP8 stream, every frame (golang.org/x/image/vp8 reads
// keyframes only). For tests and benchmarks: the daemon only encodes.
type Decoder struct{ d *C.dec_t }

// NewDecoder opens a decoder.
func NewDecoder() (*Decoder, error) {
	d := (*C.dec_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.dec_t{}))))
	if d == nil {
		return nil, fmt.Errorf("vp8: out of memory")
	}
	if rc := C.dec_open(d); rc != 0 {
		C.free(unsafe.Pointer(d))
		return nil, fmt.Errorf("vp8: open a decoder: %s", C.GoString(C.vpx_codec_err_to_string(C.vpx_codec_err_t(rc))))
	}
	return &Decoder{d: d}, nil
}

// Decode decodes one frame and answers it as a copy (nil when the frame
// shows nothing).
func (d *Decoder) Decode(frame []byte) (*image.YCbCr, error) {
	if len(frame) == 0 {
		return nil, fmt.Errorf("vp8: empty frame")
	}
	if rc := C.dec_decode(d.d, (*C.uchar)(unsafe.Pointer(&frame[0])), C.uint(len(frame))); rc != 0 {
		return nil, fmt.Errorf("vp8: decode: %s", C.GoString(C.dec_error(d.d)))
	}
	img := d.d.img
	if img == nil {
		return nil, nil
	}
	w, h := int(img.d_w), int(img.d_h)
	out := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	plane := func(dst []byte, dstStride int, p int, pw, ph int) {
		src := unsafe.Pointer(img.planes[p])
		stride := int(img.stride[p])
		for y := range ph {
			copy(dst[y*dstStride:][:pw], unsafe.Slice((*byte)(unsafe.Add(src, y*stride)), pw))
		}
	}
	cw, ch := yuv.ChromaSize(w, h)
	plane(out.Y, out.YStride, C.VPX_PLANE_Y, w, h)
	plane(out.Cb, out.CStride, C.VPX_PLANE_U, cw, ch)
	plane(out.Cr, out.CStride, C.VPX_PLANE_V, cw, ch)
	return out, nil
}

// Close frees the decoder.
func (d *Decoder) Close() {
	if d.d != nil {
		C.dec_close(d.d)
		d.d = nil
	}
}
