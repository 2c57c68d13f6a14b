//go:build !linux

package nstest

import (
	"errors"
	"fmt"
	"os"
)

// Main says that the tests run on the host: namespaces are Linux's.
func Main(pkg string) {
	fmt.Fprintf(os.Stderr, "%s tests: no namespaces of their own on this OS: running on the host's loopback and X sockets\n", pkg)
}

// Inside is false: there are no namespaces here.
func Inside() bool { return false }

// SetLoopback refuses: lo is the host's.
func SetLoopback(bool) error {
	return errors.New("not in the tests' own network namespace: lo is left alone")
}
