package process

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"golang.org/x/sys/unix"
)

// WriteStdin copies r to the process's stdin until r ends or ctx is done;
// closeAfter then closes stdin (types ^D on a PTY). It answers how many
// bytes the process accepted. A process that stops reading for
// Options.StdinStallWait ends the write with a timeout that says how much
// was accepted: the caller is never held until the process exits. On a
// terminal in line (canonical) mode, a line longer than the terminal keeps
// is refused rather than cut by the kernel without a word.
func (p *Process) WriteStdin(ctx context.Context, r io.Reader, closeAfter bool) (int64, error) {
	if p.stdin == nil {
		return 0, api.Errorf(api.KindInvalidArgument, "process %s was started without stdin (start it with stdin or pty)", p.id)
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinClosed {
		return 0, api.Errorf(api.KindInvalidArgument, "stdin of process %s is already closed", p.id)
	}
	w := &stdinWriter{p: p, ctx: ctx, stall: p.m.opts.StdinStallWait}
	// The caller's context must end a blocked write: it moves the write
	// deadline into the past (under w.mu, so a write's own deadline cannot
	// undo it).
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		w.mu.Lock()
		defer w.mu.Unlock()
		_ = p.stdin.SetWriteDeadline(time.Unix(1, 0))
	})
	n, err := io.Copy(w, r)
	if !stop() {
		<-fired
	}
	_ = p.stdin.SetWriteDeadline(time.Time{})
	if err != nil {
		var long *lineTooLong
		switch {
		case errors.As(err, &long):
			return n, api.Errorf(api.KindInvalidArgument,
				"stdin of process %s: its terminal is in line (canonical) mode, where a line holds at most %d bytes before its newline; %d bytes were written, the rest was not",
				p.id, maxCanonLine, n).WithHint("send a newline within every " + strconv.Itoa(maxCanonLine) + " bytes, or have the program read raw input (stty raw)")
		case ctx.Err() != nil:
			return n, api.Errorf(api.KindCancelled, "stdin of process %s: write cancelled after %d bytes", p.id, n)
		case errors.Is(err, os.ErrDeadlineExceeded):
			return n, api.Errorf(api.KindTimeout,
				"process %s did not read its stdin for %s: %d bytes were written, the rest was not", p.id, w.stall, n).
				WithHint("send the rest once the process reads again")
		case errors.Is(err, os.ErrClosed), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EIO):
			return n, api.Errorf(api.KindInvalidArgument, "process %s no longer reads stdin (it exited or closed it) after %d bytes", p.id, n)
		}
		return n, api.Errorf(api.KindEnv, "stdin of process %s: %w", p.id, err)
	}
	if closeAfter {
		return n, p.closeStdinLocked()
	}
	return n, nil
}

// maxCanonLine is the longest line a Linux terminal in canonical mode
// keeps (N_TTY_BUF_SIZE less one byte for the newline): the kernel drops,
// without a word, what a line holds beyond it.
const maxCanonLine = 4095

// lineTooLong says a write would have made a terminal line longer than
// maxCanonLine.
type lineTooLong struct{}

func (*lineTooLong) Error() string { return "terminal line too long" }

// stdinWriter writes to a process's stdin, each write bounded by stall.
type stdinWriter struct {
	p     *Process
	ctx   context.Context
	stall time.Duration
	mu    sync.Mutex // orders a write's deadline against the context's
}

func (w *stdinWriter) Write(b []byte) (int, error) {
	keep := len(b)
	var refuse error
	if w.p.tty != nil && w.p.canonical() {
		keep = w.p.lineRoom(b)
		if keep < len(b) {
			refuse = &lineTooLong{}
		}
	}
	w.mu.Lock()
	if err := w.ctx.Err(); err != nil {
		w.mu.Unlock()
		return 0, err
	}
	_ = w.p.stdin.SetWriteDeadline(time.Now().Add(w.stall))
	w.mu.Unlock()
	n, err := w.p.stdin.Write(b[:keep])
	if w.p.tty != nil {
		w.p.countLine(b[:n])
	}
	if err == nil {
		err = refuse
	}
	return n, err
}

// canonical reports whether the process's terminal is in line mode. The
// termios of a PTY master are its slave's.
func (p *Process) canonical() bool {
	rc, err := p.tty.SyscallConn()
	if err != nil {
		return false
	}
	canon := false
	_ = rc.Control(func(fd uintptr) {
		if t, err := unix.IoctlGetTermios(int(fd), getTermios); err == nil {
			canon = t.Lflag&unix.ICANON != 0
		}
	})
	return canon
}

// lineRoom is how much of b fits without a terminal line (the bytes since
// the last end of line, counted by countLine) growing past maxCanonLine.
func (p *Process) lineRoom(b []byte) int {
	line := p.ttyLine
	for i, c := range b {
		if endsLine(c) {
			line = 0
			continue
		}
		if line++; line > maxCanonLine {
			return i
		}
	}
	return len(b)
}

// countLine follows the length of the terminal's current line.
func (p *Process) countLine(b []byte) {
	for _, c := range b {
		if endsLine(c) {
			p.ttyLine = 0
		} else {
			p.ttyLine++
		}
	}
}

// endsLine: newline, carriage return (ICRNL turns it into one) and ^D end
// a canonical line (the kernel hands the line to the reader).
func endsLine(c byte) bool { return c == '\n' || c == '\r' || c == eot }

// CloseStdin closes the process's stdin (types ^D on a PTY).
func (p *Process) CloseStdin() error {
	if p.stdin == nil {
		return api.Errorf(api.KindInvalidArgument, "process %s was started without stdin", p.id)
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinClosed {
		return nil
	}
	return p.closeStdinLocked()
}

func (p *Process) closeStdinLocked() error {
	if p.tty != nil {
		if _, err := p.tty.Write([]byte{eot}); err != nil {
			return p.errExited()
		}
		p.ttyLine = 0
		return nil
	}
	p.stdinClosed = true
	_ = p.stdin.Close()
	return nil
}
