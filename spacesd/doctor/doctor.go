// Package doctor checks a guest for what cua-spacesd needs and reports it.
package doctor

import (
	"fmt"
	"io"
)

// Main runs the doctor command. Exit codes: 0 pass, 1 fail, 2 doctor error.
func Main(args []string, stdout, stderr io.Writer, version string) int {
	fmt.Fprintln(stderr, "cua-spacesd doctor: not implemented yet")
	return 2
}
