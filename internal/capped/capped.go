// Package capped is a buffer that keeps the first bytes written to it and
// drops the rest: the output of a helper process the daemon starts (a
// sound server, a bus), kept for its error messages, never growing with
// whatever the process prints over its life.
package capped

import (
	"bytes"
	"sync"
)

// Buffer keeps the first Max bytes written, for a writer and readers at
// once. The zero Buffer keeps nothing.
type Buffer struct {
	Max int

	mu sync.Mutex
	b  bytes.Buffer
}

// Write keeps what fits and answers len(p): the writer is never refused.
func (c *Buffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.Max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String is what was kept.
func (c *Buffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
