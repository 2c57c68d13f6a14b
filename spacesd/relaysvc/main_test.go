package relaysvc_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every session, stream and data connection goroutine ends with its
// daemon and its stand-in relay: none outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
