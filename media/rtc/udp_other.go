//go:build !linux

package rtc

import "net"

// forceBuffers: only Linux lets a privileged process pass the system's cap.
func forceBuffers(*net.UDPConn) {}
