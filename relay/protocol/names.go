package protocol

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
)

// Name limits, held by every message that carries a name.
const (
	// MaxComputerNameLen bounds a computer's name (relay:<computer>).
	MaxComputerNameLen = 64
	// MaxTextLen bounds a free-text field: a version string, a node's
	// name, a close or kick message.
	MaxTextLen = 256
)

// CheckComputerName answers invalid_argument unless name is a computer's
// name: 1 to MaxComputerNameLen letters, digits, '.', '_' or '-', starting
// with a letter or a digit (the bridge's rule for a Space's name, so a
// Space's name is a computer's name by default).
func CheckComputerName(name string) error {
	if len(name) == 0 || len(name) > MaxComputerNameLen {
		return api.Errorf(api.KindInvalidArgument, "computer name: %d bytes, want 1 to %d", len(name), MaxComputerNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return api.Errorf(api.KindInvalidArgument, "computer name %q: use letters, digits, '.', '_' and '-', starting with a letter or a digit", name)
		}
	}
	return nil
}

// isWord: letters, digits, '-' and '_' (ids, base32 or base64url).
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// isIdent: printable ASCII without spaces (a user id the relay chose).
func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// isText: valid UTF-8 without control characters (for logs and people).
func isText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checkText answers what is wrong with a free-text field, or nil.
func checkText(field, s string, required bool) error {
	switch {
	case required && s == "":
		return fmt.Errorf("%s is empty", field)
	case len(s) > MaxTextLen:
		return fmt.Errorf("%s: %d bytes, over %d", field, len(s), MaxTextLen)
	case !isText(s):
		return fmt.Errorf("%s: not UTF-8 text without control characters", field)
	}
	return nil
}
