// Package vp8 encodes I420 images to VP8 for the desktop and window streams,
// with libvpx tuned for interactive screens (realtime deadline, high
// cpu-used, no lag frames, error resilient, keyframes only on demand), and
// decodes VP8 for the tests and benchmarks that check what a viewer sees.
//
// libvpx is C: a build with cgo and Debian's libvpx-dev has it (statically
// linked by make build); any other build (CGO_ENABLED=0, as make cross)
// has a stub whose Available is false and whose calls answer Limitation.
package vp8

import (
	"errors"
	"time"
)

// Bitrate bounds of a stream in kbit/s: congestion control moves the
// encoder's target between them. Below MinBitrateKbps a screen is not
// readable; above MaxBitrateKbps a 1080p screen gains nothing visible.
const (
	MinBitrateKbps     = 300
	DefaultBitrateKbps = 3000
	MaxBitrateKbps     = 15000
)

// MaxDimension bounds each side of an encoded image: VP8's header holds
// 14 bits of width and height.
const MaxDimension = 16383

// Codec is the name a stream's codec has in the answers of the daemon.
const Codec = "vp8"

// The sentences the features desktop_stream and window_stream answer in a
// build without the encoder (Limitation is the one of this build's OS): a
// Linux build lacks it by how it was built, which a person can change; the
// macOS builds lack it by design (release builds for macOS are CGO_ENABLED=0,
// as nothing links a Linux libvpx.a into them).
const (
	LimitationLinux = "built without a video encoder: this cua-spacesd was built without cgo and libvpx (CGO_ENABLED=0); use the release build, or run make build on Linux with a C compiler and libvpx-dev installed"
	LimitationOther = "built without a video encoder: the macOS builds of cua-spacesd are built without cgo and have none; the Linux release builds stream the desktop"
)

// ErrUnavailable is what every call of the stub answers.
var ErrUnavailable = errors.New(Limitation)

// Options configure an Encoder.
type Options struct {
	Width, Height int
	// BitrateKbps is the initial target; 0 = DefaultBitrateKbps.
	BitrateKbps int
	// Threads is the number of encoding threads; 0 = one. libvpx's VP8
	// threads wait on each other by spinning: on a 2-vCPU guest that also
	// runs the desktop's apps, two threads encoded a scrolling terminal
	// six times slower than one (64 ms against 10 ms a 720p frame).
	Threads int
}

// cpuUsed is libvpx's speed in realtime mode (-16 to 16, higher faster):
// 12 keeps 1080p at 30 fps well under a core on a 2-vCPU guest, where the
// comparison (ffmpeg's libvpx) runs 8 to 16.
const cpuUsed = 12

// Encoded is one encoded frame.
type Encoded struct {
	Data []byte
	Key  bool
	// Took is the time the encoder spent on the frame.
	Took time.Duration
}
