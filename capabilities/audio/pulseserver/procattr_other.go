//go:build !linux

package pulseserver

import "syscall"

// serverProcAttr puts a server Start starts in a process group of
// its own, which Kill and Close signal whole (no parent-death signal
// outside Linux: the service manager stops the whole job instead).
func serverProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
