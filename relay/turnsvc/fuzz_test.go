package turnsvc

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/relay/protocol"
)

// ParseUsername takes any string without panicking; what it accepts has
// one spelling (String gives the input back), a computer's name, and a
// length within the protocol's bound.
func FuzzParseUsername(f *testing.F) {
	for _, s := range []string{
		"1767225600:box-1:viewer-0123456789abcdef",
		"1767225600:box-1:space-0123456789abcdef",
		"1:a:b",
		"01767225600:box-1:viewer-1",
		"+1767225600:box-1:viewer-1",
		"1767225600:box 1:viewer-1",
		"1767225600::viewer-1",
		"1767225600:box-1:",
		"1767225600:box-1:viewer:extra",
		"99999999999999999999:box-1:viewer-1",
		"-5:box-1:viewer-1",
		"1767225600",
		"",
		strings.Repeat("9", 300),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUsername(s)
		if err != nil {
			return
		}
		if got := u.String(); got != s {
			t.Fatalf("%q parsed and spelled back as %q", s, got)
		}
		if len(s) > protocol.MaxTurnUsernameLen || protocol.CheckComputerName(u.Computer) != nil || u.Who == "" || u.Expiry.Unix() <= 0 {
			t.Fatalf("%q accepted as %+v", s, u)
		}
	})
}
