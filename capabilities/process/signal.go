package process

import (
	"strconv"
	"strings"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
)

// signals are the signals a client may send by name. The list is closed on
// purpose: a name outside it is a mistake worth an error, not a guess.
var signals = []struct {
	name string
	sig  syscall.Signal
}{
	{"TERM", syscall.SIGTERM},
	{"KILL", syscall.SIGKILL},
	{"INT", syscall.SIGINT},
	{"HUP", syscall.SIGHUP},
	{"QUIT", syscall.SIGQUIT},
	{"USR1", syscall.SIGUSR1},
	{"USR2", syscall.SIGUSR2},
	{"STOP", syscall.SIGSTOP},
	{"CONT", syscall.SIGCONT},
}

// ParseSignal maps a signal name ("TERM", "SIGTERM", "term") to its signal.
func ParseSignal(name string) (syscall.Signal, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "SIG")
	for _, s := range signals {
		if s.name == n {
			return s.sig, nil
		}
	}
	return 0, api.Errorf(api.KindInvalidArgument,
		"unknown signal %q: use one of TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT (SIG prefix optional)", name)
}

// SignalName names a signal the way the wire reports it ("KILL"), for any
// signal, not only the ones a client may send.
func SignalName(sig syscall.Signal) string {
	for _, s := range signals {
		if s.sig == sig {
			return s.name
		}
	}
	switch sig {
	case syscall.SIGPIPE:
		return "PIPE"
	case syscall.SIGALRM:
		return "ALRM"
	case syscall.SIGSEGV:
		return "SEGV"
	case syscall.SIGABRT:
		return "ABRT"
	case syscall.SIGBUS:
		return "BUS"
	case syscall.SIGFPE:
		return "FPE"
	case syscall.SIGILL:
		return "ILL"
	case syscall.SIGTRAP:
		return "TRAP"
	}
	return strconv.Itoa(int(sig))
}
