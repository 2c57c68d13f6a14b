package registry

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Files of the relay login under the home directory: where the relay is
// and how it is trusted in relay.json, the user's token apart in
// relay-token.json (mode 0600), as spaces.json and tokens.json.
const (
	RelayFile      = "relay.json"
	RelayTokenFile = "relay-token.json"
)

// LoginHint is what to do when the bridge has no relay login (or the relay
// refuses it).
const LoginHint = "log in first: cua-bridge relay login --url https://RELAY --token-file FILE"

// RelayLogin is the relay a bridge home is logged into, and as whom.
type RelayLogin struct {
	URL string `json:"url"`
	// Fingerprint pins the relay's certificate; CAFile is a PEM file of
	// the CAs that sign it. Neither: the system's roots.
	Fingerprint string `json:"fingerprint,omitempty"`
	CAFile      string `json:"ca_file,omitempty"`
	// User and UserID are who GET /v1/me said the token belongs to, at
	// login.
	User   string `json:"user,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Token  string `json:"-"`
}

// Trust is how a client trusts the relay's certificate.
func (l RelayLogin) Trust() relayapi.Trust {
	return relayapi.Trust{CAFile: l.CAFile, Fingerprint: l.Fingerprint}
}

type relayTokenDoc struct {
	Token string `json:"token"`
}

// relayEntry is the Entry of a computer reached through the relay:
// https://RELAY/c/<computer> with the user's token, trusted as the relay.
func relayEntry(l RelayLogin, computer string) Entry {
	return Entry{
		Name: PrefixRelay + computer, URL: relayapi.ComputerURL(l.URL, computer), Token: l.Token,
		Fingerprint: l.Fingerprint, CAFile: l.CAFile, Relay: computer,
	}
}

// notLoggedIn is the error of a relay call without a login.
func notLoggedIn(what string) *api.Error {
	return api.Errorf(api.KindUnauthenticated, "%s: this bridge is not logged in to a relay", what).WithHint(LoginHint)
}

// LoginRelay checks l (its URL, trust and user token) by asking the relay
// who the token belongs to (GET /v1/me), then keeps it as this home's relay,
// replacing any other: the token in RelayTokenFile (0600), the rest in
// RelayFile, written under the registry's lock and atomically. It answers
// the relay's Me.
func (r *Registry) LoginRelay(ctx context.Context, l RelayLogin) (*relayapi.Me, error) {
	l, err := checkRelayLogin(l)
	if err != nil {
		return nil, err
	}
	c, err := relayapi.New(l.URL, l.Token, l.Trust())
	if err != nil {
		return nil, err
	}
	defer c.CloseIdleConnections()
	me, err := c.Me(ctx)
	if err != nil {
		return nil, err
	}
	l.User, l.UserID = me.User.Name, me.User.ID
	unlock, err := r.lock(true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Token first: a crash between the two leaves a token without a relay
	// (not logged in), never a relay with another user's token.
	if err := r.writeJSON(RelayTokenFile, relayTokenDoc{Token: l.Token}, tokensMode); err != nil {
		return nil, err
	}
	if err := r.writeJSON(RelayFile, l, spacesMode); err != nil {
		return nil, err
	}
	r.syncRelayLocked(&l)
	return me, nil
}

// checkRelayLogin checks a login's form offline and answers it canonical.
func checkRelayLogin(l RelayLogin) (RelayLogin, error) {
	u, err := relayapi.ParseURL(l.URL)
	if err != nil {
		return l, err
	}
	l.URL = u.String()
	l.Token = strings.TrimSpace(l.Token)
	kind, err := protocol.ParseToken(l.Token)
	if err != nil {
		return l, err
	}
	if kind != protocol.TokenUser {
		return l, api.Errorf(api.KindInvalidArgument, "relay token: a %s_ token, not a user's (%s_)", kind, protocol.TokenUser).
			WithHint("create a user token: cua-relay token create USER")
	}
	if l.Fingerprint != "" {
		sum, err := api.ParseFingerprint(l.Fingerprint)
		if err != nil {
			return l, err
		}
		l.Fingerprint = api.FingerprintPrefix + hex.EncodeToString(sum[:])
	}
	if l.CAFile != "" {
		if l.CAFile, err = filepath.Abs(l.CAFile); err != nil {
			return l, api.Errorf(api.KindInvalidArgument, "relay CA file %s: %w", l.CAFile, err)
		}
	}
	return l, nil
}

// LogoutRelay forgets the relay login; false when there was none.
func (r *Registry) LogoutRelay() (bool, error) {
	unlock, err := r.lock(true)
	if err != nil {
		return false, err
	}
	defer unlock()
	l, err := r.readRelay()
	if err != nil {
		return false, err
	}
	// The relay first: a crash in between leaves a token without a
	// relay, which is not a login.
	for _, name := range []string{RelayFile, RelayTokenFile} {
		if err := os.Remove(filepath.Join(r.home, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, api.Errorf(api.KindIO, "log out: %w", err)
		}
	}
	r.syncRelayLocked(nil)
	return l != nil, nil
}

// Relay answers the relay login, or kind unauthenticated with LoginHint
// when there is none.
func (r *Registry) Relay() (RelayLogin, error) {
	l, err := r.relaySnapshot()
	if err != nil {
		return RelayLogin{}, err
	}
	if l == nil {
		return RelayLogin{}, notLoggedIn("relay")
	}
	return *l, nil
}

// RelayClient answers the client of the relay's user API for the login
// (unauthenticated without one): one per login, kept while it lasts.
func (r *Registry) RelayClient() (*relayapi.Client, RelayLogin, error) {
	l, err := r.Relay()
	if err != nil {
		return nil, l, err
	}
	r.relayMu.Lock()
	defer r.relayMu.Unlock()
	if r.relayClient != nil && r.relayKey == l {
		return r.relayClient, l, nil
	}
	c, err := relayapi.New(l.URL, l.Token, l.Trust())
	if err != nil {
		return nil, l, err
	}
	if r.relayClient != nil {
		r.relayClient.CloseIdleConnections()
	}
	r.relayClient, r.relayKey = c, l
	return c, l, nil
}

// RelaySpace is one computer of the logged-in user, as the relay lists it,
// and the Entry that reaches it (relay:<computer>).
type RelaySpace struct {
	Entry    Entry
	Computer relayapi.Computer
}

// RelaySpaces lists the logged-in user's computers (GET /v1/computers).
// Without a login it answers none and no error; a relay that cannot be
// reached is the error, for the caller to show beside the local Spaces.
func (r *Registry) RelaySpaces(ctx context.Context) ([]RelaySpace, error) {
	l, err := r.relaySnapshot()
	if err != nil || l == nil {
		return nil, err
	}
	c, l2, err := r.RelayClient()
	if err != nil {
		return nil, err
	}
	comps, err := c.Computers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RelaySpace, 0, len(comps))
	for _, comp := range comps {
		if protocol.CheckComputerName(comp.Name) != nil {
			continue // not a name an id can carry; a relay would not make one
		}
		out = append(out, RelaySpace{Entry: relayEntry(l2, comp.Name), Computer: comp})
	}
	return out, nil
}

// relaySnapshot reads the relay login under a shared lock.
func (r *Registry) relaySnapshot() (*RelayLogin, error) {
	unlock, err := r.lock(false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	l, err := r.readRelay()
	if err != nil {
		return nil, err
	}
	r.syncRelayLocked(l)
	return l, nil
}

// readRelay reads the login; nil without one (no relay file, or no token).
func (r *Registry) readRelay() (*RelayLogin, error) {
	var l RelayLogin
	if err := r.readJSON(RelayFile, &l); err != nil {
		return nil, err
	}
	if l.URL == "" {
		return nil, nil
	}
	var t relayTokenDoc
	if err := r.readJSON(RelayTokenFile, &t); err != nil {
		return nil, err
	}
	if t.Token == "" {
		return nil, nil
	}
	l.Token = t.Token
	return &l, nil
}

// syncRelayLocked brings the client cache in line with the login just read.
func (r *Registry) syncRelayLocked(l *RelayLogin) { r.clients.syncRelay(l) }
