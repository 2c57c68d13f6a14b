package desktop

import "syscall"

// childProcAttr puts Xvfb and the window manager in their own process
// group and has the kernel stop them if the daemon dies without Close.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
