package relaysvc_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// forged is a grant whose signature's last byte was flipped: its payload
// intact, its signature no longer the relay's.
func forged(g []byte) []byte {
	b := bytes.Clone(g)
	b[len(b)-1] ^= 0x01
	return b
}

// asEditor rewrites a signed viewer's grant to say editor (the same
// length: the frame still parses), keeping the viewer's signature: the
// signature covers the role, so it no longer holds.
func asEditor(t *testing.T, g []byte) []byte {
	t.Helper()
	from, to := []byte(`"role":"viewer"`), []byte(`"role":"editor"`)
	if bytes.Count(g, from) != 1 {
		t.Fatalf("the grant does not hold %s once: %q", from, g)
	}
	return bytes.Replace(g, from, to, 1)
}

// The attacked grants at the daemon's entry point for relayed streams,
// with no relay in front (TestBadGrantClosesTheStream checks the closed
// stream and the refusals' count; this, that nothing ran, beside the
// roles' own refusals): each closes the stream before anything is
// read, so an exec sent on it does not run. An intact viewer's grant is
// served, but its exec is permission_denied (and does not run either),
// while its capabilities answer.
func TestAttackedGrantRunsNothing(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	attach(t, d, relay)
	rs := relay.next(t)
	viewer := func(g *protocol.Grant) { g.Role = protocol.RoleViewer }
	editor := func(g *protocol.Grant) { g.Role = protocol.RoleEditor }
	dir := t.TempDir()
	cases := []struct {
		name  string
		grant []byte
		want  int // 0: the stream closed, nothing answered
		ran   bool
	}{
		{"forged signature", forged(relay.grant(t, "u-eda", nil, editor)), 0, false},
		{"another computer's", relay.grant(t, "u-eda", nil, func(g *protocol.Grant) { editor(g); g.Computer = "other-box" }), 0, false},
		{"expired", relay.grant(t, "u-eda", nil, func(g *protocol.Grant) {
			editor(g)
			g.IssuedAt = time.Now().Add(-10 * time.Minute)
			g.ExpiresAt = g.IssuedAt.Add(time.Minute)
		}), 0, false},
		{"viewer replayed as editor", asEditor(t, relay.grant(t, "u-vic", nil, viewer)), 0, false},
		{"signed by a key the Space was not given", relay.grant(t, "u-eda", newKey(t), editor), 0, false},
		{"viewer", relay.grant(t, "u-vic", nil, viewer), http.StatusForbidden, false},
		{"editor", relay.grant(t, "u-eda", nil, editor), http.StatusOK, true},
	}
	for i, tc := range cases {
		marker := filepath.Join(dir, fmt.Sprint(i))
		c := rs.open(t, tc.grant)
		code, _ := post(c, api.PathExec, fmt.Sprintf(`{"shell":"touch %s"}`, marker))
		c.Close()
		if code != tc.want {
			t.Errorf("%s: exec answered %d, want %d", tc.name, code, tc.want)
		}
		if _, err := os.Stat(marker); (err == nil) != tc.ran {
			t.Errorf("%s: the exec ran: %v, want %v", tc.name, err == nil, tc.ran)
		}
	}
	if code, err := get(rs.open(t, relay.grant(t, "u-vic", nil, viewer)), api.PathCapabilities); code != http.StatusOK {
		t.Errorf("a viewer's capabilities: %d %v", code, err)
	}
}

// post sends one JSON POST over c and answers the status (0: no answer).
func post(c net.Conn, path, body string) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://relay"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(c); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
