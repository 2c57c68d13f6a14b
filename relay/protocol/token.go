package protocol

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"hash/crc32"
	"math/big"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// TokenKind is what a token opens, and its prefix: a secret scanner finds
// a token by it, and a token of one kind is never taken for another.
type TokenKind string

// The kinds of token the relay issues.
const (
	// TokenUser is a person's API token (the bridge's relay login).
	TokenUser TokenKind = "cuau"
	// TokenComputer is a Space's computer token (its control session).
	TokenComputer TokenKind = "cuac"
	// TokenData is a one-time token for one bulk data connection (OpenData).
	TokenData TokenKind = "cuad"
)

// Valid reports whether k is one of the kinds above.
func (k TokenKind) Valid() bool {
	switch k {
	case TokenUser, TokenComputer, TokenData:
		return true
	}
	return false
}

// The token format: kind + "_" + body + checksum, where body is 256 random
// bits in base62 (tokenBodyLen digits, most significant first, zero-padded)
// and checksum is the CRC-32 (IEEE) of kind + "_" + body in base62
// (tokenSumLen digits). Base62 keeps the token one word for a double-click
// and a scanner; the checksum catches a typo or a truncated paste offline.
const (
	tokenRandomBytes = 32
	tokenBodyLen     = 43 // 62^43 > 2^256
	tokenSumLen      = 6  // 62^6 > 2^32
	// TokenLen is the length of every token: "cuac_" + 43 + 6.
	TokenLen = 4 + 1 + tokenBodyLen + tokenSumLen
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var max256 = new(big.Int).Lsh(big.NewInt(1), 256)

// NewToken makes a token of kind k. It is shown once, to whoever asked;
// the store keeps HashToken of it.
func NewToken(k TokenKind) (string, error) {
	if !k.Valid() {
		return "", api.Errorf(api.KindInvalidArgument, "token kind %q: want %s, %s or %s", k, TokenUser, TokenComputer, TokenData)
	}
	var raw [tokenRandomBytes]byte
	rand.Read(raw[:]) // never fails (crypto/rand: Go 1.24)
	head := string(k) + "_" + encodeBase62(new(big.Int).SetBytes(raw[:]), tokenBodyLen)
	return head + checksum(head), nil
}

// ParseToken checks the form of s (prefix, length, alphabet, checksum)
// without any store, and answers its kind. A bad one is invalid_argument:
// it was never a token, so no store need be asked. Callers trim what they
// read from a file first; ParseToken takes no whitespace.
func ParseToken(s string) (TokenKind, error) {
	// The messages never quote s: it may be a real token with one typo.
	if len(s) != TokenLen {
		return "", api.Errorf(api.KindInvalidArgument, "token: %d characters, want %d; copy it again, whole", len(s), TokenLen)
	}
	kind, rest, ok := strings.Cut(s, "_")
	if !ok || !TokenKind(kind).Valid() {
		return "", api.Errorf(api.KindInvalidArgument, "token: unknown prefix; a relay token starts with %s_, %s_ or %s_", TokenUser, TokenComputer, TokenData)
	}
	body, sum := rest[:tokenBodyLen], rest[tokenBodyLen:]
	n, ok := decodeBase62(body)
	if !ok || n.Cmp(max256) >= 0 {
		return "", api.Errorf(api.KindInvalidArgument, "token: not a %s token (bad characters); copy it again", kind)
	}
	if _, ok := decodeBase62(sum); !ok || sum != checksum(s[:len(s)-tokenSumLen]) {
		return "", api.Errorf(api.KindInvalidArgument, "token: checksum does not match (a typo or a cut paste); copy it again")
	}
	return TokenKind(kind), nil
}

// HashToken is what a store keeps of a token: its SHA-256.
func HashToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// TokenEqual reports whether presented is the token whose hash is stored.
// It compares digests in constant time, so the time it takes says nothing
// of how much of a guess was right.
func TokenEqual(stored [32]byte, presented string) bool {
	h := HashToken(presented)
	return subtle.ConstantTimeCompare(stored[:], h[:]) == 1
}

func checksum(head string) string {
	return encodeBase62(new(big.Int).SetUint64(uint64(crc32.ChecksumIEEE([]byte(head)))), tokenSumLen)
}

func encodeBase62(n *big.Int, width int) string {
	out := make([]byte, width)
	n = new(big.Int).Set(n)
	d, m := big.NewInt(62), new(big.Int)
	for i := width - 1; i >= 0; i-- {
		n.DivMod(n, d, m)
		out[i] = base62[m.Int64()]
	}
	return string(out)
}

func decodeBase62(s string) (*big.Int, bool) {
	n, d := new(big.Int), big.NewInt(62)
	for i := 0; i < len(s); i++ {
		v := strings.IndexByte(base62, s[i])
		if v < 0 {
			return nil, false
		}
		n.Mul(n, d).Add(n, big.NewInt(int64(v)))
	}
	return n, true
}
