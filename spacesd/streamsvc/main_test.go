package streamsvc_test

import (
	"os"
	"testing"

	"github.com/trycua/cua-spacesd/internal/nstest"
)

// TestMain runs the tests in namespaces of their own: their X servers and
// ports cannot meet another test run's on the same machine.
func TestMain(m *testing.M) {
	nstest.Main("spacesd/streamsvc")
	os.Exit(m.Run())
}
