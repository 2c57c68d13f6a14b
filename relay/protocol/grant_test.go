package protocol_test

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// testKey is a fixed key, so that fuzz seeds signed with it stay valid.
func testKey() (ed25519.PublicKey, ed25519.PrivateKey) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	return priv.Public().(ed25519.PublicKey), priv
}

var t0 = time.UnixMilli(1_800_000_000_000)

func TestGrantRoundTrip(t *testing.T) {
	pub, priv := testKey()
	for _, role := range []protocol.Role{protocol.RoleOwner, protocol.RoleEditor, protocol.RoleViewer} {
		g := protocol.NewGrant("dev-box.1", "u_42", "Ada Lovelace é", role, t0)
		b, err := protocol.SignGrant(priv, g)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > protocol.MaxGrantSize {
			t.Fatalf("a grant of %d bytes, over MaxGrantSize", len(b))
		}
		// Good from issue to expiry, and within the skew either side.
		for _, now := range []time.Time{t0, t0.Add(protocol.DefaultGrantTTL), t0.Add(-protocol.GrantClockSkew), t0.Add(protocol.DefaultGrantTTL + protocol.GrantClockSkew)} {
			got, err := protocol.VerifyGrant(pub, b, "dev-box.1", now)
			if err != nil {
				t.Fatalf("VerifyGrant at %s: %v", now.Sub(t0), err)
			}
			if got.ID != g.ID || got.Person != g.Person || got.PersonName != g.PersonName || got.Role != role ||
				!got.IssuedAt.Equal(g.IssuedAt) || !got.ExpiresAt.Equal(g.ExpiresAt) || got.Computer != g.Computer {
				t.Fatalf("VerifyGrant = %+v, want %+v", got, g)
			}
		}
	}
}

func TestVerifyGrantRefuses(t *testing.T) {
	pub, priv := testKey()
	otherPub, otherPriv, _ := ed25519.GenerateKey(nil)
	good := protocol.NewGrant("box", "u_1", "Ada", protocol.RoleOwner, t0)
	sign := func(priv ed25519.PrivateKey, g protocol.Grant) []byte {
		b, err := protocol.SignGrant(priv, g)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	signRaw := func(payload string) []byte {
		b, err := protocol.SignGrantPayload(priv, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	payload := func(edit func(m map[string]any)) string {
		m := map[string]any{"id": "g1", "computer": "box", "person": "u_1", "person_name": "Ada", "role": "owner",
			"iat_ms": t0.UnixMilli(), "exp_ms": t0.Add(time.Minute).UnixMilli()}
		edit(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	b := sign(priv, good)
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)/2] ^= 1
	badFormat := append([]byte{2}, b[1:]...)
	long := good
	long.ExpiresAt = t0.Add(protocol.MaxGrantTTL + time.Second)

	for _, tt := range []struct {
		name     string
		pub      ed25519.PublicKey
		grant    []byte
		computer string
		now      time.Time
		kind     api.Kind
		want     string
	}{
		{"empty", pub, nil, "box", t0, api.KindUnauthenticated, "bytes"},
		{"truncated", pub, b[:len(b)-1], "box", t0, api.KindUnauthenticated, "does not fit"},
		{"extra byte", pub, append(append([]byte(nil), b...), 0), "box", t0, api.KindUnauthenticated, "does not fit"},
		{"oversized", pub, make([]byte, protocol.MaxGrantSize+1), "box", t0, api.KindUnauthenticated, "bytes"},
		{"wrong format", pub, badFormat, "box", t0, api.KindUnauthenticated, "format 2"},
		{"flipped bit", pub, flipped, "box", t0, api.KindUnauthenticated, "signature"},
		{"another relay's key", otherPub, b, "box", t0, api.KindUnauthenticated, "signature"},
		{"signed by another relay", pub, sign(otherPriv, good), "box", t0, api.KindUnauthenticated, "signature"},
		{"bad pinned key", pub[:31], b, "box", t0, api.KindUnauthenticated, "pinned relay key"},
		{"another computer", pub, b, "box2", t0, api.KindUnauthenticated, `names computer "box"`},
		{"expired", pub, b, "box", t0.Add(protocol.DefaultGrantTTL + protocol.GrantClockSkew + time.Millisecond), api.KindUnauthenticated, "expired"},
		{"not yet issued", pub, b, "box", t0.Add(-protocol.GrantClockSkew - time.Millisecond), api.KindUnauthenticated, "in the future"},
		{"too long", pub, signRaw(payload(func(m map[string]any) { m["exp_ms"] = long.ExpiresAt.UnixMilli() })), "box", t0, api.KindUnauthenticated, "longer than"},
		{"expires before issued", pub, signRaw(payload(func(m map[string]any) { m["exp_ms"] = t0.UnixMilli() })), "box", t0, api.KindUnauthenticated, "expires before"},
		{"unknown role", pub, signRaw(payload(func(m map[string]any) { m["role"] = "admin" })), "box", t0, api.KindPermissionDenied, `role "admin"`},
		{"no role", pub, signRaw(payload(func(m map[string]any) { delete(m, "role") })), "box", t0, api.KindPermissionDenied, `role ""`},
		{"unknown field", pub, signRaw(payload(func(m map[string]any) { m["admin"] = true })), "box", t0, api.KindUnauthenticated, "unknown field"},
		{"trailing data", pub, signRaw(payload(func(map[string]any) {}) + "{}"), "box", t0, api.KindUnauthenticated, "after the JSON"},
		{"not JSON", pub, signRaw("owner"), "box", t0, api.KindUnauthenticated, "payload"},
		{"no person", pub, signRaw(payload(func(m map[string]any) { m["person"] = "" })), "box", t0, api.KindUnauthenticated, "person"},
		{"person all", pub, signRaw(payload(func(m map[string]any) { m["person"] = protocol.KickAll })), "box", t0, api.KindUnauthenticated, "person"},
		{"bad computer name", pub, signRaw(payload(func(m map[string]any) { m["computer"] = "../x" })), "../x", t0, api.KindUnauthenticated, "computer name"},
		{"control character in name", pub, signRaw(payload(func(m map[string]any) { m["person_name"] = "Ada\x1b[2J" })), "box", t0, api.KindUnauthenticated, "person_name"},
		{"no id", pub, signRaw(payload(func(m map[string]any) { m["id"] = "" })), "box", t0, api.KindUnauthenticated, "id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := protocol.VerifyGrant(tt.pub, tt.grant, tt.computer, tt.now)
			if err == nil {
				t.Fatalf("VerifyGrant = %+v, nil; want %s", g, tt.kind)
			}
			if api.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("VerifyGrant: %v (kind %s), want kind %s saying %q", err, api.KindOf(err), tt.kind, tt.want)
			}
			if g != (protocol.Grant{}) {
				t.Fatalf("a refused grant answered %+v", g)
			}
		})
	}
}

func TestSignGrantRefuses(t *testing.T) {
	_, priv := testKey()
	good := protocol.NewGrant("box", "u_1", "Ada", protocol.RoleViewer, t0)
	for _, tt := range []struct {
		name string
		priv ed25519.PrivateKey
		edit func(g *protocol.Grant)
	}{
		{"short key", priv[:10], func(*protocol.Grant) {}},
		{"bad role", priv, func(g *protocol.Grant) { g.Role = "root" }},
		{"no computer", priv, func(g *protocol.Grant) { g.Computer = "" }},
		{"too long", priv, func(g *protocol.Grant) { g.ExpiresAt = g.IssuedAt.Add(protocol.MaxGrantTTL + time.Millisecond) }},
		{"expired at issue", priv, func(g *protocol.Grant) { g.ExpiresAt = g.IssuedAt }},
		{"long name", priv, func(g *protocol.Grant) { g.PersonName = strings.Repeat("x", protocol.MaxPersonLen+1) }},
		{"space in person", priv, func(g *protocol.Grant) { g.Person = "u 1" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := good
			tt.edit(&g)
			if _, err := protocol.SignGrant(tt.priv, g); api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("SignGrant: %v, want invalid_argument", err)
			}
		})
	}
}

func TestRoleValid(t *testing.T) {
	for r, want := range map[protocol.Role]bool{"owner": true, "editor": true, "viewer": true, "": false, "Owner": false, "admin": false} {
		if got := r.Valid(); got != want {
			t.Errorf("Role(%q).Valid() = %v, want %v", r, got, want)
		}
	}
}

// FuzzVerifyGrant: any bytes verify or answer unauthenticated or
// permission_denied. The seeds are signed with testKey, and the fuzz
// signs what it makes too (odd), so the checks behind the signature
// are reached; what verifies signs again to the same grant.
func FuzzVerifyGrant(f *testing.F) {
	pub, priv := testKey()
	for _, role := range []protocol.Role{protocol.RoleOwner, protocol.RoleViewer} {
		b, _ := protocol.SignGrant(priv, protocol.NewGrant("box", "u_1", "Ada", role, t0))
		f.Add(b, false)
	}
	f.Add([]byte(`{"id":"g","computer":"box","person":"p","person_name":"","role":"editor","iat_ms":1800000000000,"exp_ms":1800000060000}`), true)
	f.Add([]byte(`{"id":"g","computer":"box","person":"p","role":"x","iat_ms":1800000000000,"exp_ms":1800000000001}`), true)
	f.Fuzz(func(t *testing.T, b []byte, sign bool) {
		if sign {
			var err error
			if b, err = protocol.SignGrantPayload(priv, b); err != nil {
				return
			}
		}
		g, err := protocol.VerifyGrant(pub, b, "box", t0)
		if err != nil {
			if k := api.KindOf(err); k != api.KindUnauthenticated && k != api.KindPermissionDenied {
				t.Fatalf("%q: error of kind %s: %v", b, k, err)
			}
			return
		}
		again, err := protocol.SignGrant(priv, g)
		if err != nil {
			t.Fatalf("%q verified as %+v, which does not sign: %v", b, g, err)
		}
		g2, err := protocol.VerifyGrant(pub, again, "box", t0)
		if err != nil || g2 != g {
			t.Fatalf("%q verified as %+v, which round-trips to %+v, %v", b, g, g2, err)
		}
	})
}
