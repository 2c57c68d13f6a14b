package relay_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/internal/nstest"
)

// TestMain runs the tests in network and mount namespaces of their own
// (nstest): the relay, the Spaces and their X servers are born inside, so
// no packet of theirs can leave the machine. The test binary plays one
// more part, chosen by its environment: with envRelay set it is a relay
// process (relayProcessConfig as JSON), which a benchmark measures from
// outside and restarts.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(envRelay); cfg != "" {
		os.Exit(runRelayProcess(cfg))
	}
	nstest.Main("test/relay")
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
