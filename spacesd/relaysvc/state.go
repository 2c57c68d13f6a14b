package relaysvc

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// Files of the state directory.
const (
	// StateFile holds the attachment: URLs, how the relay's certificate is
	// trusted, the computer's name and the pinned grant key.
	StateFile = "relay.json"
	// TokenFile holds the computer token a PUT /v1/relay gave (mode 0600).
	TokenFile = "relay.token"
)

// attachment is what the Space keeps of its relay, in memory and in
// StateFile. The token is not in it: it lives in TokenPath (the
// --relay-token-file, or TokenFile of the state dir), re-read before
// every dial, or, with no state dir and no file, in memory only.
type attachment struct {
	URLs        []string `json:"urls"`
	Fingerprint string   `json:"fingerprint,omitempty"`
	CAPEM       string   `json:"ca_pem,omitempty"`
	// TokenPath is where the token is read from.
	TokenPath string `json:"token_file,omitempty"`
	// Computer is the name the relay's Welcome gave (sent in the next Hello).
	Computer string `json:"computer,omitempty"`
	// GrantKey is the pinned key (protocol.GrantKeyPrefix + base64), "" until the
	// first session pins it.
	GrantKey string `json:"grant_key,omitempty"`
	// LastURL is the URL of the last session that came up: the next
	// start dials it first.
	LastURL string `json:"last_url,omitempty"`

	// token is the token when there is no TokenPath (no state dir).
	token string
}

func (a attachment) grantKey() (ed25519.PublicKey, error) {
	if a.GrantKey == "" {
		return nil, nil
	}
	return parseGrantKey(a.GrantKey)
}

func formatGrantKey(k ed25519.PublicKey) string { return protocol.FormatGrantKey(k) }

func parseGrantKey(s string) (ed25519.PublicKey, error) { return protocol.ParseGrantKey(s) }

// sameRelay reports whether b names the relay a names, so that what a
// session learnt (computer, key) still holds.
func (a attachment) sameRelay(b attachment) bool {
	return slices.Equal(a.URLs, b.URLs)
}

// readToken reads the computer token now (the file may have been
// replaced since the last dial).
func (a attachment) readToken() (string, error) {
	if a.TokenPath == "" {
		if a.token == "" {
			return "", api.Errorf(api.KindInvalidArgument, "no relay token")
		}
		return a.token, nil
	}
	b, err := os.ReadFile(a.TokenPath)
	if err != nil {
		return "", fmt.Errorf("relay token file: %w", err)
	}
	tok := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	if tok == "" {
		return "", fmt.Errorf("relay token file %s is empty", a.TokenPath)
	}
	return tok, nil
}

// loadState reads dir's StateFile; no file is no attachment (nil, nil).
func loadState(dir string) (*attachment, error) {
	if dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var a attachment
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, StateFile), err)
	}
	if len(a.URLs) == 0 {
		return nil, fmt.Errorf("%s names no relay URL", filepath.Join(dir, StateFile))
	}
	return &a, nil
}

// saveState writes a to dir's StateFile atomically.
func saveState(dir string, a attachment) error {
	if dir == "" {
		return nil
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, StateFile), append(b, '\n'))
}

// forgetState removes what dir keeps of the relay.
func forgetState(dir string) error {
	if dir == "" {
		return nil
	}
	var errs []error
	for _, f := range []string{StateFile, TokenFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeAtomic replaces path with b (mode 0600): a temp file in the same
// directory, synced, renamed over it, and the directory synced, so that a
// crash leaves the old file or the new one, never half of one.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, a no-op
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
