package cli

import (
	"io"
	"time"
)

// ParseLocation exposes parseLocation to the external tests and the fuzz target.
func ParseLocation(s string) (space, path string, err error) {
	l, err := parseLocation(s)
	return l.space, l.path, err
}

// DrawProgress draws a progress bar of total bytes at done, as cp does on a
// terminal, and finishes it.
func DrawProgress(w io.Writer, total, done int64) {
	p := &progress{w: w, label: "test", total: total, start: time.Now()}
	p.set(done)
	p.finish()
}
