package mcpsvc

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Bounds of what a service's stderr may put in the daemon's log. A service
// is the image's program, and a chatty or broken one must not fill the
// disk or drown the daemon's own lines.
const (
	// maxLogLineBytes cuts a longer line (the rest is counted, not kept).
	maxLogLineBytes = 4 << 10
	// logBurstLines is how many lines a service may log per logWindow;
	// past them lines are counted, and the count is logged once the
	// window ends.
	logBurstLines = 200
	logWindow     = 10 * time.Second
	// tailLines are the last lines kept for an error message: why a
	// service did not start, or how it died.
	tailLines = 5
)

// lineLog writes a service's stderr to the daemon's log, one record a
// line, under the service's name, and keeps its last lines. It never
// blocks the service.
type lineLog struct {
	log  *slog.Logger
	now  func() time.Time
	mu   sync.Mutex
	buf  []byte // the line being written
	long int    // bytes cut from it
	tail []string

	windowStart time.Time
	inWindow    int
	dropped     int
}

func newLineLog(log *slog.Logger) *lineLog { return &lineLog{log: log, now: time.Now} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		room := maxLogLineBytes - len(l.buf)
		if len(chunk) > room {
			l.long += len(chunk) - room
			chunk = chunk[:room]
		}
		l.buf = append(l.buf, chunk...)
		if i < 0 {
			break
		}
		l.flushLine()
		p = p[i+1:]
	}
	return n, nil
}

// Close logs a last line the service did not end.
func (l *lineLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 || l.long > 0 {
		l.flushLine()
	}
	l.rollWindow(true)
	return nil
}

func (l *lineLog) flushLine() {
	line := strings.TrimRight(string(l.buf), "\r")
	long := l.long
	l.buf, l.long = l.buf[:0], 0
	l.tail = append(l.tail, line)
	if len(l.tail) > tailLines {
		l.tail = l.tail[1:]
	}
	l.rollWindow(false)
	if l.inWindow >= logBurstLines {
		l.dropped++
		return
	}
	l.inWindow++
	attrs := []slog.Attr{slog.String("line", line)}
	if long > 0 {
		attrs = append(attrs, slog.Int("cut_bytes", long))
	}
	l.log.LogAttrs(context.Background(), slog.LevelInfo, "stderr", attrs...)
}

// rollWindow starts a new window when the current one is over (or at the
// end), logging how many lines the old one dropped.
func (l *lineLog) rollWindow(end bool) {
	now := l.now()
	if !end && now.Sub(l.windowStart) < logWindow {
		return
	}
	if l.dropped > 0 {
		l.log.Warn("stderr lines dropped: the service logs faster than the daemon keeps", "dropped", l.dropped, "window", logWindow)
	}
	l.windowStart, l.inWindow, l.dropped = now, 0, 0
}

// Tail is the last lines the service wrote, for an error message.
func (l *lineLog) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.tail
	if len(l.buf) > 0 {
		lines = append(append([]string{}, lines...), string(l.buf))
	}
	return strings.Join(lines, " | ")
}

// tailNote is the last lines for an error message ("" when there are
// none), as "; its stderr ends: ...".
func (l *lineLog) tailNote() string {
	if l == nil {
		return ""
	}
	if t := l.Tail(); t != "" {
		return "; its stderr ends: " + t
	}
	return ""
}
