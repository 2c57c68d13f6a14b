package a11ybus

import "syscall"

// procAttr puts a process Start starts in a process group of its own,
// which Close signals whole, and has the kernel kill it if its starter
// dies without Close.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
