package process

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// A program started with a signal ignored hands that to every process it
// starts: execve keeps an ignored signal ignored. nohup ignores SIGHUP, and
// a shell's background job (cua-spacesd serve &) SIGINT and SIGQUIT; the
// daemon's processes would then ignore them, and process_signal HUP (or
// a PTY's hangup) would do nothing. execve resets a caught signal to its
// default, so the first Manager catches those the program ignores, and
// goes on ignoring them itself: nothing reads the channel. Signal
// dispositions belong to the whole program, hence a Once.
var (
	restoreIgnoredOnce sync.Once
	caughtIgnored      = make(chan os.Signal, 1)
)

// restoreIgnored catches the signals this program was started ignoring,
// among those a process of a Space expects at their default.
func restoreIgnored() {
	restoreIgnoredOnce.Do(func() {
		for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
			if signal.Ignored(sig) {
				signal.Notify(caughtIgnored, sig)
			}
		}
	})
}
