package api

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// FingerprintPrefix starts every certificate fingerprint the daemon prints
// and the bridge pins: "sha256:" and the hex of the SHA-256 of the
// certificate's DER bytes, as `openssl x509 -fingerprint -sha256` computes
// it (which prints it in upper case with colons; both forms are read).
const FingerprintPrefix = "sha256:"

// CertFingerprint is the fingerprint of a certificate's DER bytes.
func CertFingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return FingerprintPrefix + hex.EncodeToString(sum[:])
}

// ParseFingerprint reads a fingerprint as CertFingerprint writes it, or
// as openssl prints it (upper case, colons, with or without the prefix),
// and answers the SHA-256 digest.
func ParseFingerprint(s string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	in := strings.TrimSpace(s)
	if len(in) > 7 && strings.EqualFold(in[:7], FingerprintPrefix) {
		in = in[7:]
	} else if v, ok := strings.CutPrefix(strings.ToLower(in), "sha256 fingerprint="); ok {
		in = v
	}
	in = strings.ReplaceAll(in, ":", "")
	b, err := hex.DecodeString(in)
	if err != nil || len(b) != sha256.Size {
		return sum, Errorf(KindInvalidArgument, "fingerprint %.100q is not a certificate's sha256: want sha256:<64 hex digits>, as cua-spacesd prints it", s)
	}
	copy(sum[:], b)
	return sum, nil
}
