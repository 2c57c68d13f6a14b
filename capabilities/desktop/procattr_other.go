//go:build !linux

package desktop

import "syscall"

// childProcAttr puts Xvfb and the window manager in their own process
// group (no parent-death signal outside Linux: the service manager stops
// the whole job instead).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
