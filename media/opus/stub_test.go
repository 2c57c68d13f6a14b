//go:build !cgo

package opus_test

import (
	"errors"
	"testing"

	"github.com/trycua/cua-spacesd/media/opus"
)

// TestStub: a build without cgo says so in the limitation the feature
// reports, and refuses to open an encoder or a decoder.
func TestStub(t *testing.T) {
	if opus.Available || opus.Version() != "" {
		t.Fatal("a build without cgo claims an encoder")
	}
	if _, err := opus.NewEncoder(opus.Options{}); !errors.Is(err, opus.ErrUnavailable) {
		t.Fatalf("NewEncoder without libopus: %v", err)
	}
	if _, err := opus.NewDecoder(); !errors.Is(err, opus.ErrUnavailable) {
		t.Fatalf("NewDecoder without libopus: %v", err)
	}
}
