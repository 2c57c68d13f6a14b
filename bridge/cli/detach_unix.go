//go:build unix

package cli

import "syscall"

// detached starts the opener in a session of its own, so that the
// browser it starts is not ended with the terminal's job.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
