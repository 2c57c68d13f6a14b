package pulse

import (
	"os"

	"golang.org/x/sys/unix"
)

// credentials is the ancillary data that sends our process's credentials
// with a packet on a unix socket. PulseAudio lets in a peer of its own
// user without a cookie, but it judges by credentials that come with the
// AUTH packet; the kernel attaches them unasked only when the server had
// asked for them (SO_PASSCRED) before the packet was sent, which a client
// quick after connect may beat. libpulse sends them explicitly too.
func credentials() []byte {
	return unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
}
