package server

import (
	"crypto/ed25519"
	"net/http"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/relay/protocol"
)

// BenchmarkGrantCheck is the daemon's check of a caller, per call, the
// ways a call arrives, same run: the token's constant-time compare (a
// direct call: hashed, then compared), a relayed stream's grant (its
// ed25519 signature, fields and expiry, then the route's role check: paid
// once per stream), and the role check alone (every call on a pooled
// relayed stream after its first).
func BenchmarkGrantCheck(b *testing.B) {
	const token = "0123456789abcdef0123456789abcdef0123456789abcdef"
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	g := protocol.NewGrant("box", "u-bob", "bob", protocol.RoleEditor, now)
	signed, err := protocol.SignGrant(priv, g)
	if err != nil {
		b.Fatal(err)
	}
	rt := Route{Method: http.MethodPost, Path: "/v1/exec", Roles: EditorRoles()}
	b.Run("token-compare", func(b *testing.B) {
		a := NewAuth(token, nil)
		for b.Loop() {
			if _, ok := a.Check(token); !ok {
				b.Fatal("token refused")
			}
		}
	})
	b.Run("grant-verify+role", func(b *testing.B) {
		for b.Loop() {
			g, err := protocol.VerifyGrant(pub, signed, "box", now)
			if err != nil {
				b.Fatal(err)
			}
			if !permits(rt, Role(g.Role)) {
				b.Fatal("editor refused")
			}
		}
	})
	b.Run("role-on-pooled-stream", func(b *testing.B) {
		p := Principal{Person: "u-bob", Role: RoleEditor}
		for b.Loop() {
			if !permits(rt, p.Role) {
				b.Fatal("editor refused")
			}
		}
	})
}
