package relaysvc

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

func frame(t testing.TB, m protocol.Message) []byte {
	f, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := protocol.AppendFrame(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzReadWelcome feeds the attacher's handshake reader arbitrary bytes
// from the relay: it never panics, every refusal has an api kind, and a
// welcome it accepts is one the Hello accepts, of the pinned key and the
// named computer.
func FuzzReadWelcome(f *testing.F) {
	key := ed25519.PublicKey(bytes.Repeat([]byte{7}, ed25519.PublicKeySize))
	good := protocol.Welcome{Version: protocol.Version, GrantKey: key, Heartbeat: 15000, Node: "n1", Computer: "box"}
	f.Add(frame(f, good), "box", true)
	f.Add(frame(f, good), "", false)
	other := good
	other.Computer = "other"
	f.Add(frame(f, other), "box", true)
	f.Add(frame(f, protocol.Close{Code: protocol.CloseTokenRevoked, Message: "gone"}), "", false)
	f.Add(frame(f, protocol.Ping{Nonce: 1}), "", false)
	f.Add([]byte{2, 0, 0, 0, 2, '{', '}'}, "", false)
	f.Fuzz(func(t *testing.T, b []byte, computer string, pin bool) {
		hello := protocol.NewHello(computer, "test")
		var pinned ed25519.PublicKey
		if pin {
			pinned = key
		}
		w, err := readWelcome(protocol.NewReader(bytes.NewReader(b)), hello, pinned)
		if err != nil {
			if api.AsError(err).Kind == "" {
				t.Fatalf("an error without a kind: %v", err)
			}
			return
		}
		if !hello.Accepts(w.Version) || len(w.GrantKey) != ed25519.PublicKeySize {
			t.Fatalf("accepted %+v", w)
		}
		if computer != "" && w.Computer != computer {
			t.Fatalf("accepted computer %q for %q", w.Computer, computer)
		}
		if pin && !pinned.Equal(w.GrantKey) {
			t.Fatal("accepted another grant key")
		}
	})
}

// FuzzRefusedFrom reads a refused upgrade's answer: any body and
// Retry-After, no panic, a bounded wait.
func FuzzRefusedFrom(f *testing.F) {
	f.Add(401, `{"error":{"kind":"unauthenticated","message":"no","reason":"token_revoked"}}`, "")
	f.Add(503, `busy`, "30")
	f.Add(503, `{"error":null}`, "999999999999")
	f.Fuzz(func(t *testing.T, status int, body, retryAfter string) {
		resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {retryAfter}}, Body: io.NopCloser(strings.NewReader(body))}
		e := refusedFrom(resp)
		if e.RetryAfter < 0 || e.RetryAfter > protocol.MaxRetryAfter {
			t.Fatalf("retry after %v", e.RetryAfter)
		}
		_ = e.Error()
	})
}

// FuzzState reads relay.json as the state dir holds it: any bytes, no
// panic; an attachment it accepts names a URL, and its grant key, if
// any, is a whole Ed25519 key or refused.
func FuzzState(f *testing.F) {
	f.Add([]byte(`{"urls":["wss://relay.example"],"computer":"box","grant_key":"ed25519:` + strings.Repeat("A", 43) + `="}`))
	f.Add([]byte(`{"urls":[]}`))
	f.Add([]byte(`{"urls":["wss://r"],"grant_key":"rsa:xx"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, StateFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := loadState(dir)
		if err != nil || a == nil {
			return
		}
		if len(a.URLs) == 0 {
			t.Fatal("accepted an attachment without URLs")
		}
		if k, err := a.grantKey(); err == nil && k != nil && len(k) != ed25519.PublicKeySize {
			t.Fatalf("a grant key of %d bytes", len(k))
		}
	})
}
