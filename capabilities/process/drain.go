package process

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// maxFinalDrainBytes bounds the last non-blocking read of a pipe whose
// writer is a background child that keeps writing: enough to empty any
// pipe buffer, not so much that a chatty daemon holds us forever.
const maxFinalDrainBytes = 4 << 20

// copyOutput copies f into w until f ends. When stopOutput later makes the
// read fail with a deadline, it takes whatever the pipe still holds without
// blocking and returns: the bytes a command wrote before it exited are
// never dropped, however late this goroutine gets to run.
func copyOutput(f *os.File, w io.Writer, buf []byte) {
	for {
		n, err := f.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drainNonBlocking(f, w, buf)
		}
		// EOF for a pipe, EIO for a PTY whose last slave closed: the end.
		return
	}
}

// drainNonBlocking reads what is buffered in f right now.
func drainNonBlocking(f *os.File, w io.Writer, buf []byte) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	total := 0
	_ = rc.Control(func(fd uintptr) {
		for total < maxFinalDrainBytes {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil {
				return // EAGAIN: empty; 0: EOF
			}
			_, _ = w.Write(buf[:n])
			total += n
		}
	})
}

// stopOutput makes the readers of outputs finish: a deadline in the past
// wakes a blocked read (copyOutput then drains what is left); a file the
// poller does not manage is closed instead.
func stopOutput(outputs []*os.File) {
	for _, f := range outputs {
		if err := f.SetReadDeadline(time.Now()); err != nil {
			_ = f.Close()
		}
	}
}

// waitOutput waits for the readers to finish (done closes), at most grace
// after which a background child still holding the pipes is no longer waited for.
func waitOutput(done <-chan struct{}, outputs []*os.File, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		stopOutput(outputs)
		<-done
	}
}
