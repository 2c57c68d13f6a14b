package protocol_test

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

func TestTokenRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range []protocol.TokenKind{protocol.TokenUser, protocol.TokenComputer, protocol.TokenData} {
		for range 50 {
			tok, err := protocol.NewToken(k)
			if err != nil {
				t.Fatal(err)
			}
			if len(tok) != protocol.TokenLen || !strings.HasPrefix(tok, string(k)+"_") {
				t.Fatalf("NewToken(%s) = %q: want %d characters after %s_", k, tok, protocol.TokenLen, k)
			}
			if seen[tok] {
				t.Fatalf("NewToken(%s) repeated %q", k, tok)
			}
			seen[tok] = true
			got, err := protocol.ParseToken(tok)
			if err != nil || got != k {
				t.Fatalf("ParseToken(NewToken(%s)) = %s, %v", k, got, err)
			}
			if !protocol.TokenEqual(protocol.HashToken(tok), tok) {
				t.Fatalf("TokenEqual(HashToken(t), t) = false")
			}
		}
	}
	if _, err := protocol.NewToken("cuax"); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("NewToken(cuax): %v, want invalid_argument", err)
	}
}

// TestParseTokenRefuses: every damage a paste can do is caught offline.
func TestParseTokenRefuses(t *testing.T) {
	tok, err := protocol.NewToken(protocol.TokenComputer)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	body := strings.TrimPrefix(tok, "cuac_")
	for _, tt := range []struct{ name, in, want string }{
		{"empty", "", "characters"},
		{"truncated", tok[:len(tok)-1], "characters"},
		{"extra", tok + "0", "characters"},
		{"trailing newline", tok[:len(tok)-1] + "\n", "checksum"},
		{"typo in body", flip(tok, 10), "checksum"},
		{"typo in checksum", flip(tok, len(tok)-1), "checksum"},
		{"swapped prefix", "cuau_" + body, "checksum"},
		{"unknown prefix", "cuax_" + body, "prefix"},
		{"no separator", "cuac-" + body, "prefix"},
		{"bad character", tok[:20] + "+" + tok[21:], "bad characters"},
		{"over 256 bits", "cuac_" + strings.Repeat("z", 43) + "000000", "bad characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := protocol.ParseToken(tt.in)
			if api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseToken(%q) = %v, want invalid_argument saying %q", tt.in, err, tt.want)
			}
			if strings.Contains(err.Error(), body[:10]) {
				t.Fatalf("the error quotes the token: %v", err)
			}
		})
	}
}

func TestTokenEqual(t *testing.T) {
	a, _ := protocol.NewToken(protocol.TokenUser)
	b, _ := protocol.NewToken(protocol.TokenUser)
	h := protocol.HashToken(a)
	for _, tt := range []struct {
		presented string
		want      bool
	}{{a, true}, {b, false}, {"", false}, {a[:len(a)-1], false}, {a + " ", false}} {
		if got := protocol.TokenEqual(h, tt.presented); got != tt.want {
			t.Errorf("TokenEqual(hash of a, %q) = %v, want %v", tt.presented, got, tt.want)
		}
	}
}

// FuzzParseToken: any string parses or answers invalid_argument, and one
// that parses has the form NewToken makes.
func FuzzParseToken(f *testing.F) {
	for _, k := range []protocol.TokenKind{protocol.TokenUser, protocol.TokenComputer, protocol.TokenData} {
		tok, _ := protocol.NewToken(k)
		f.Add(tok)
	}
	f.Add("cuac_" + strings.Repeat("0", 49))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := protocol.ParseToken(s)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%q: error of kind %s: %v", s, api.KindOf(err), err)
			}
			return
		}
		if !k.Valid() || len(s) != protocol.TokenLen || !strings.HasPrefix(s, string(k)+"_") {
			t.Fatalf("%q parsed as kind %q", s, k)
		}
	})
}
