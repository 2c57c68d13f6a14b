package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progressInterval is how often the bar is redrawn: often enough to look
// alive, rarely enough to cost nothing next to the transfer.
const progressInterval = 100 * time.Millisecond

// progressBarWidth is the bar's width in cells.
const progressBarWidth = 30

// progress draws a one-line transfer bar on a terminal. A nil *progress
// (stderr is not a terminal) draws nothing, so scripts and logs stay clean.
type progress struct {
	w     io.Writer
	label string
	total int64
	start time.Time

	mu    sync.Mutex
	done  int64
	drawn time.Time
}

func newProgress(stderr io.Writer, label string, total int64) *progress {
	if _, tty := isTerminal(stderr); !tty {
		return nil
	}
	return &progress{w: stderr, label: label, total: total, start: time.Now()}
}

// set records that n bytes are done and redraws when it is time.
func (p *progress) set(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = n
	if now := time.Now(); now.Sub(p.drawn) >= progressInterval {
		p.drawn = now
		p.draw(now)
	}
}

// finish draws the final state and ends the line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(time.Now())
	fmt.Fprintln(p.w)
}

func (p *progress) draw(now time.Time) {
	frac := 1.0
	if p.total > 0 {
		// Clamped: a file that grows while it is read (a log) passes its
		// size, and the bar must not grow (or panic) with it.
		frac = min(max(float64(p.done)/float64(p.total), 0), 1)
	}
	filled := int(frac * progressBarWidth)
	rate := float64(p.done) / max(now.Sub(p.start).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %s/%s %s/s\x1b[K", p.label,
		strings.Repeat("=", filled), strings.Repeat(" ", progressBarWidth-filled),
		frac*100, humanBytes(float64(p.done)), humanBytes(float64(p.total)), humanBytes(rate))
}

// humanBytes renders a byte count with a binary unit ("12.5 MiB").
func humanBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
