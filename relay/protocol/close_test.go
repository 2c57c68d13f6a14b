package protocol_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// TestCloseCodes: every code has its own word and number in the
// WebSocket private range, and CloseCodeFor finds each from its word.
func TestCloseCodes(t *testing.T) {
	words := map[string]protocol.CloseCode{}
	for _, c := range protocol.CloseCodes() {
		if c < 4000 || c > 4999 || !c.Known() {
			t.Errorf("close code %d (%s): outside 4000-4999 or unknown", c, c)
		}
		if prev, ok := words[c.String()]; ok {
			t.Errorf("codes %d and %d share the word %q", prev, c, c)
		}
		words[c.String()] = c
		err := api.Errorf(api.KindRelay, "x").WithReason(c.String())
		if got := protocol.CloseCodeFor(err); got != c {
			t.Errorf("CloseCodeFor(reason %s) = %s", c, got)
		}
		if e := c.Err("why"); e.Kind != c.Kind() || !strings.Contains(e.Message, c.String()) || !strings.Contains(e.Message, "why") {
			t.Errorf("%s.Err(why) = %+v", c, e)
		}
	}
	if c := protocol.CloseCode(4999); c.Known() || c.String() != "close_4999" {
		t.Errorf("an unknown code reads %q (known %v)", c, c.Known())
	}
	for _, tt := range []struct {
		err  error
		want protocol.CloseCode
	}{
		{nil, protocol.CloseNormal},
		{api.Errorf(api.KindInvalidArgument, "bad"), protocol.CloseProtocolError},
		{api.Errorf(api.KindUnauthenticated, "bad grant"), protocol.CloseGrantInvalid},
		{errors.New("boom"), protocol.CloseInternalError},
	} {
		if got := protocol.CloseCodeFor(tt.err); got != tt.want {
			t.Errorf("CloseCodeFor(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
	for c, want := range map[protocol.CloseCode]api.Kind{
		protocol.CloseTokenRevoked: api.KindUnauthenticated, protocol.CloseKicked: api.KindPermissionDenied,
		protocol.CloseTooManyStreams: api.KindLimitExceeded, protocol.CloseGoingAway: api.KindRelay,
	} {
		if c.Kind() != want {
			t.Errorf("%s.Kind() = %s, want %s", c, c.Kind(), want)
		}
	}
}
