package relayd

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/store"
)

// A PUT's body, read as the route reads it: either a who of one of three
// kinds and a role a share may have, or invalid_argument. It never panics.
func FuzzShareRequest(f *testing.F) {
	for _, s := range []string{
		`{"who":"bob"}`,
		`{"who":"bob","role":"editor"}`,
		`{"who":"Cat@Example.org","role":"viewer"}`,
		`{"who":"team:red"}`,
		`{"who":"team:"}`,
		`{"who":"team:red/x"}`,
		`{"who":" bob "}`,
		`{"who":"bob","role":"owner"}`,
		`{"who":"bob","role":"link"}`,
		`{"who":"","role":"viewer"}`,
		`{"who":"a@"}`,
		`{"who":"a b@c"}`,
		`{"who":"bob","extra":1}`,
		`{"who":"bob"}{}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("PUT", "/v1/computers/pc/shares", bytes.NewReader(body))
		var req relayapi.ShareRequest
		err := readJSON(r, &req)
		var kind whoKind
		var v string
		var role protocol.Role
		if err == nil {
			kind, v, role, err = parseShareRequest(req)
		}
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: kind %s, want invalid_argument", body, api.KindOf(err))
			}
			return
		}
		if role != protocol.RoleViewer && role != protocol.RoleEditor {
			t.Fatalf("%q: role %q", body, role)
		}
		who := strings.TrimSpace(req.Who)
		switch kind {
		case whoTeam:
			if who != relayapi.TeamPrefix+v || store.CheckUserName(v) != nil {
				t.Fatalf("%q: team %q", body, v)
			}
		case whoEmail:
			if v != who || !strings.Contains(v, "@") || strings.ContainsAny(v, " \t\r\n") {
				t.Fatalf("%q: email %q", body, v)
			}
		case whoName:
			if v != who || store.CheckUserName(v) != nil {
				t.Fatalf("%q: name %q", body, v)
			}
		default:
			t.Fatalf("%q: kind %d", body, kind)
		}
	})
}
