package cli_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a command starts must end with it; idle keep-alive
// connections of the shared HTTP transport belong to the client, not to a
// command.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}
