package relaysvc_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// getWith sends one GET over a relayed stream with an Authorization
// header ("" for none) and answers the status and body.
func getWith(t *testing.T, rs *relaySession, grant []byte, path, auth string) (int, string) {
	t.Helper()
	c := rs.open(t, grant)
	defer c.Close()
	req, _ := http.NewRequest(http.MethodGet, "http://relay"+path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatalf("GET %s through the relay: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A stream whose grant carries a TURN credential brings it to the
// daemon as its principal's ICE servers, on the relay's own host unless
// the credential names one; a link's grant maps to the link role, whose
// requests need their ticket: GET /v1/stream/ice answers those servers
// to it, and refuses it a token.
func TestGrantTurnBecomesICEServers(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	attach(t, d, relay)
	rs := relay.next(t)
	tk, err := d.Auth.MintTicket(server.Ticket{Scope: server.TicketScopeStream, Target: "screen", Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	turn := &protocol.TurnCredential{Username: "1999999999:box:space", Password: "c2VjcmV0LXNlY3JldC1zZWNyZXQ=", UDPPort: 3478, TCPPort: 3478, TLSPort: 5349}
	linkGrant := func(cred *protocol.TurnCredential) []byte {
		return relay.grant(t, protocol.LinkPerson, nil, func(g *protocol.Grant) { g.Role, g.Turn = protocol.RoleLink, cred })
	}
	named := *turn
	named.Host = "turn.example"
	cases := []struct {
		name  string
		grant []byte
		auth  string
		code  int
		want  []api.ICEServer
	}{
		{"link with its ticket", linkGrant(turn), "Bearer " + tk, 200, []api.ICEServer{{
			URLs:     []string{"turn:127.0.0.1:3478?transport=udp", "turn:127.0.0.1:3478?transport=tcp", "turns:127.0.0.1:5349?transport=tcp"},
			Username: turn.Username, Credential: turn.Password}}},
		{"a credential naming its host", linkGrant(&named), "Bearer " + tk, 200, []api.ICEServer{{
			URLs:     []string{"turn:turn.example:3478?transport=udp", "turn:turn.example:3478?transport=tcp", "turns:turn.example:5349?transport=tcp"},
			Username: turn.Username, Credential: turn.Password}}},
		{"link without turn", linkGrant(nil), "Bearer " + tk, 200, []api.ICEServer{}},
		{"link with the token", linkGrant(turn), "Bearer " + d.Token, 401, nil},
		{"link with nothing", linkGrant(turn), "", 401, nil},
		{"owner with turn", relay.grant(t, "u-alice", nil, func(g *protocol.Grant) { g.Turn = turn }), "", 200, []api.ICEServer{{
			URLs:     []string{"turn:127.0.0.1:3478?transport=udp", "turn:127.0.0.1:3478?transport=tcp", "turns:127.0.0.1:5349?transport=tcp"},
			Username: turn.Username, Credential: turn.Password}}},
		{"owner without turn", relay.grant(t, "u-alice", nil, nil), "", 200, []api.ICEServer{}},
	}
	for _, tc := range cases {
		code, body := getWith(t, rs, tc.grant, api.PathStreamICE, tc.auth)
		if code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
			continue
		}
		if tc.code != 200 {
			continue
		}
		var got api.StreamICE
		if err := json.Unmarshal([]byte(body), &got); err != nil || got.ICEServers == nil || !reflect.DeepEqual(got.ICEServers, tc.want) {
			t.Errorf("%s: %s, want %+v", tc.name, body, tc.want)
		}
	}
}
