package turnsvc

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // TURN REST credentials are HMAC-SHA1 by definition
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/relay/protocol"
)

// The REST username: "<expiry, Unix seconds>:<computer>:<who>-<random>".
// The random tail makes each credential unique (two views of one computer
// minted in the same second differ), so one can be told apart in a log.
const (
	// maxWhoLen bounds the third field ("viewer-<16 hex>" is 23 bytes).
	maxWhoLen = 64
	// randomLen is the random tail's bytes (hex-encoded in the username).
	randomLen = 8
)

// Username is a parsed REST username.
type Username struct {
	Expiry   time.Time
	Computer string
	// Who is the third field: "space-<hex>" or "viewer-<hex>".
	Who string
}

var errUsername = errors.New("turn username")

// ParseUsername parses a REST username. It checks the form only (the
// computer part is a computer's name, the expiry a positive number of
// seconds), not the password nor whether it has expired.
func ParseUsername(s string) (Username, error) {
	if len(s) == 0 || len(s) > protocol.MaxTurnUsernameLen {
		return Username{}, fmt.Errorf("%w: %d bytes, want 1 to %d", errUsername, len(s), protocol.MaxTurnUsernameLen)
	}
	exp, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Username{}, fmt.Errorf("%w: want <expiry>:<computer>:<who>", errUsername)
	}
	computer, who, ok := strings.Cut(rest, ":")
	if !ok {
		return Username{}, fmt.Errorf("%w: want <expiry>:<computer>:<who>", errUsername)
	}
	// Digits only: ParseInt would take "+5" too, and a username has one
	// spelling per credential.
	if len(exp) == 0 || len(exp) > 19 || strings.Trim(exp, "0123456789") != "" || (len(exp) > 1 && exp[0] == '0') {
		return Username{}, fmt.Errorf("%w: expiry %q is not Unix seconds", errUsername, exp)
	}
	sec, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || sec <= 0 {
		return Username{}, fmt.Errorf("%w: expiry %q is not Unix seconds", errUsername, exp)
	}
	if err := protocol.CheckComputerName(computer); err != nil {
		return Username{}, fmt.Errorf("%w: %w", errUsername, err)
	}
	if len(who) == 0 || len(who) > maxWhoLen || !isWho(who) {
		return Username{}, fmt.Errorf("%w: who must be 1 to %d letters, digits, '-' or '_'", errUsername, maxWhoLen)
	}
	return Username{Expiry: time.Unix(sec, 0), Computer: computer, Who: who}, nil
}

// String spells u as a username; ParseUsername(u.String()) == u.
func (u Username) String() string {
	return strconv.FormatInt(u.Expiry.Unix(), 10) + ":" + u.Computer + ":" + u.Who
}

func isWho(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// password is base64(HMAC-SHA1(secret, username)), the TURN REST
// convention (and pion's LongTermTURNRESTAuthHandler's).
func password(secret []byte, username string) string {
	m := hmac.New(sha1.New, secret)
	m.Write([]byte(username))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// newWho is who's field with a random tail.
func newWho(who string) string {
	b := make([]byte, randomLen)
	rand.Read(b)
	return who + "-" + hex.EncodeToString(b)
}
