//go:build !linux

package a11ybus

import "syscall"

// procAttr puts a process Start starts in a process group of its own,
// which Close signals whole (no parent-death signal outside Linux: the
// service manager stops the whole job instead).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
