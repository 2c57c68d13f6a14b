package turnsvc

import "syscall"

// forceBuffers sets fd's buffers past the system's cap (CAP_NET_ADMIN).
func forceBuffers(fd, n int) {
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n)
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, n)
}
