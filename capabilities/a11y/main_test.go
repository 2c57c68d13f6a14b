package a11y_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/internal/nstest"
)

// TestMain runs the tests in namespaces of their own (their X servers
// cannot meet another run's) and checks that no goroutine outlives them.
func TestMain(m *testing.M) {
	nstest.Main("capabilities/a11y")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
