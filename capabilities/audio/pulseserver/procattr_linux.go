package pulseserver

import "syscall"

// serverProcAttr puts a server Start starts in a process group of
// its own, which Kill and Close signal whole, and has the kernel kill it
// if its starter dies without Close.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
