//go:build !cgo

package vp8

import (
	"image"
	"time"

	"github.com/trycua/cua-spacesd/media/yuv"
)

// Available says this build has the encoder: not without cgo.
const Available = false

// Version is libvpx's version string: none here.
func Version() string { return "" }

// Encoder is the stub of a build without libvpx: it cannot be opened.
type Encoder struct{}

// NewEncoder answers ErrUnavailable.
func NewEncoder(Options) (*Encoder, error) { return nil, ErrUnavailable }

func (*Encoder) Image() *yuv.Image { return nil }

func (*Encoder) Encode(time.Duration, time.Duration, bool) (Encoded, error) {
	return Encoded{}, ErrUnavailable
}

func (*Encoder) SetBitrate(int) error { return ErrUnavailable }

func (*Encoder) Bitrate() int { return 0 }

func (*Encoder) Close() {}

// Decoder is the stub of a build without libvpx.
type Decoder struct{}

// NewDecoder answers ErrUnavailable.
func NewDecoder() (*Decoder, error) { return nil, ErrUnavailable }

func (*Decoder) Decode([]byte) (*image.YCbCr, error) { return nil, ErrUnavailable }

func (*Decoder) Close() {}
