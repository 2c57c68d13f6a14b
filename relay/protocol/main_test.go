package protocol_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (a
// writer blocked on a peer that never reads, say).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
