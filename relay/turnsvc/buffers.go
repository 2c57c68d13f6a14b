package turnsvc

import "net"

// Socket buffers of TURN's UDP sockets. A keyframe (1080p: ~150 KB) is a
// burst of over 100 packets that the relay takes in on one socket and
// sends out of another; the kernel's default buffers (about 200 KB,
// shared by every client of the listener) drop part of it, and the
// viewer's picture freezes until the next keyframe.
const (
	// listenerBufferBytes is the listener's: every client's packets.
	listenerBufferBytes = 4 << 20
	// relayedBufferBytes is each relayed socket's: one view's.
	relayedBufferBytes = 1 << 20
)

// setBuffers asks for n bytes each way on pc, past the system's cap
// (net.core.rmem_max, wmem_max) when the relay may (CAP_NET_ADMIN);
// without it the kernel gives what the cap allows, which still beats
// the default.
func setBuffers(pc net.PacketConn, n int) {
	u, ok := pc.(*net.UDPConn)
	if !ok {
		return
	}
	_ = u.SetReadBuffer(n)
	_ = u.SetWriteBuffer(n)
	raw, err := u.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) { forceBuffers(int(fd), n) })
}
