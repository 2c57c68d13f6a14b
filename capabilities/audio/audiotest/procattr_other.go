//go:build !linux

package audiotest

import "syscall"

// procAttr puts the server in a process group of its own, which Kill and
// the cleanup signal whole.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
