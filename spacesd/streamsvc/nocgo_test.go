//go:build !cgo

package streamsvc_test

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestWithoutEncoder: a build without cgo (make cross, CGO_ENABLED=0)
// serves on, and reports both stream features unsupported with the
// limitation that says how to get them; an offer answers
// capability_missing.
func TestWithoutEncoder(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []api.Feature{api.FeatureDesktopStream, api.FeatureWindowStream} {
		ok, lim := caps.Supports(f)
		if ok || !strings.HasPrefix(lim, "built without a video encoder") {
			t.Errorf("%s: supported %v, limitation %q", f, ok, lim)
		}
	}
	if _, err := d.Client.StreamTicket(t.Context(), api.TicketRequest{}); api.KindOf(err) != api.KindCapabilityMissing {
		t.Errorf("a ticket without the encoder: %v", err)
	}
}
