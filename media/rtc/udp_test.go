package rtc_test

import (
	"os"
	"testing"

	"github.com/trycua/cua-spacesd/media/rtc"
)

// TestListenUDPBuffers: the media socket gets its 4 MB each way; past the
// system's cap only a privileged daemon can have them (forced), so an
// unprivileged run only checks that the socket opens.
func TestListenUDPBuffers(t *testing.T) {
	c, rb, wb, err := rtc.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if os.Geteuid() == 0 && (rb < rtc.SocketBufferBytes || wb < rtc.SocketBufferBytes) {
		t.Fatalf("buffers read %d, write %d as root; want %d each", rb, wb, rtc.SocketBufferBytes)
	}
	if _, _, _, err := rtc.ListenUDP(c.LocalAddr().String()); err == nil {
		t.Fatal("a second socket bound the same port")
	}
}
