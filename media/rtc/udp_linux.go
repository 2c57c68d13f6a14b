package rtc

import (
	"net"

	"golang.org/x/sys/unix"
)

// forceBuffers sets the buffers past net.core.rmem_max/wmem_max, which
// Linux allows a process with CAP_NET_ADMIN (a daemon run as root).
func forceBuffers(c *net.UDPConn) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, SocketBufferBytes)
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, SocketBufferBytes)
	})
}
