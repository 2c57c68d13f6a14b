package rtc

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// SocketBufferBytes is the read and write buffer of the media UDP socket:
// a 1080p keyframe of 150 KB arrives as a burst of over 100 packets, and
// the kernel's default buffers (about 200 KB, shared by every viewer)
// drop part of it.
const SocketBufferBytes = 4 << 20

// ListenUDP opens the one UDP socket every viewer's ICE traffic shares,
// with SocketBufferBytes of buffer each way. Past the system's cap
// (net.core.rmem_max) the buffers are forced when the daemon may
// (CAP_NET_ADMIN); the sizes it got are answered for the log.
func ListenUDP(addr string) (*net.UDPConn, int, int, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("media UDP address %q: %w", addr, err)
	}
	c, err := net.ListenUDP("udp4", ua)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("media UDP: listen %s: %w", addr, err)
	}
	_ = c.SetReadBuffer(SocketBufferBytes)
	_ = c.SetWriteBuffer(SocketBufferBytes)
	rb, wb := bufferSizes(c)
	if rb < SocketBufferBytes || wb < SocketBufferBytes {
		forceBuffers(c)
		rb, wb = bufferSizes(c)
	}
	return c, rb, wb, nil
}

// bufferSizes reads the buffers the kernel gave (it reports twice what was
// asked, its bookkeeping included; halved here).
func bufferSizes(c *net.UDPConn) (rb, wb int) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = raw.Control(func(fd uintptr) {
		rb, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		wb, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	})
	return rb / 2, wb / 2
}
