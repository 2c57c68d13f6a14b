package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/cli"
)

// A file that grows while cp reads it (a log) gives more bytes than its
// size said: the bar must stay whole rather than panic.
func TestProgressPastTotal(t *testing.T) {
	for _, tc := range []struct{ total, done int64 }{
		{100, 0}, {100, 50}, {100, 100}, {100, 101}, {100, 1 << 40}, {0, 10},
	} {
		var b bytes.Buffer
		cli.DrawProgress(&b, tc.total, tc.done)
		if !strings.Contains(b.String(), "[") || !strings.Contains(b.String(), "]") {
			t.Errorf("total %d done %d: %q", tc.total, tc.done, b.String())
		}
	}
}
