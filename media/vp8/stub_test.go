//go:build !cgo

package vp8_test

import (
	"errors"
	"testing"

	"github.com/trycua/cua-spacesd/media/vp8"
)

// TestStub: a build without cgo says so in the limitation the features
// report, and refuses to open an encoder.
func TestStub(t *testing.T) {
	if vp8.Available {
		t.Fatal("a build without cgo claims an encoder")
	}
	if _, err := vp8.NewEncoder(vp8.Options{Width: 64, Height: 64}); !errors.Is(err, vp8.ErrUnavailable) {
		t.Fatalf("NewEncoder without libvpx: %v", err)
	}
}
