package spacesdtest

import (
	"bytes"
	"sync"
)

// Logs is a daemon's log as a test reads it (give it to Options.Logger's
// handler): the daemon writes while the test reads.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
