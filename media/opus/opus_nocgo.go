//go:build !cgo

package opus

import "time"

// Available says this build has the encoder: not without cgo.
const Available = false

// Version is libopus's version string: none here.
func Version() string { return "" }

// Encoder is the stub of a build without libopus: it cannot be opened.
type Encoder struct{}

// NewEncoder answers ErrUnavailable.
func NewEncoder(Options) (*Encoder, error) { return nil, ErrUnavailable }

func (*Encoder) Encode([]int16) (Packet, error) { return Packet{}, ErrUnavailable }

func (*Encoder) SetBitrate(int) error { return ErrUnavailable }

func (*Encoder) Bitrate() int { return 0 }

func (*Encoder) Lookahead() time.Duration { return 0 }

func (*Encoder) FinalRange() uint32 { return 0 }

func (*Encoder) Close() {}

// Decoder is the stub of a build without libopus.
type Decoder struct{}

// NewDecoder answers ErrUnavailable.
func NewDecoder() (*Decoder, error) { return nil, ErrUnavailable }

func (*Decoder) Decode([]byte, []int16) (int, error) { return 0, ErrUnavailable }

func (*Decoder) DecodeFEC([]byte, []int16) (int, error) { return 0, ErrUnavailable }

func (*Decoder) FinalRange() uint32 { return 0 }

func (*Decoder) Close() {}
