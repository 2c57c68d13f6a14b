package rtc_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/media/rtc"
)

// TestEngineIdleRunsNothing: until a viewer joins, nothing of pion runs;
// its UDP mux's reader (and what it holds) cost an idle daemon resident
// memory. The reader's goroutine names its creator in the dump from its
// go statement on, whether or not the scheduler has run it yet.
func TestEngineIdleRunsNothing(t *testing.T) {
	const reader = "created by github.com/pion/ice/v4.NewUDPMuxDefault"
	before := goroutinesIn(reader)
	udp, _, _, err := rtc.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	e, err := rtc.NewEngine(rtc.Config{UDP: udp})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if after := goroutinesIn(reader); after > before {
		t.Fatalf("an engine with no viewer started %d goroutines (%s)", after-before, reader)
	}
}

// goroutinesIn counts the goroutines whose stack names fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}
