package protocol

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// Role is what a grant lets its person do on a computer. What each role
// may do is the daemon's business (DESIGN §4: owner everything; editor all
// but attach, detach, rotate and share; viewer looks only); this package
// only names them.
type Role string

// The roles.
const (
	RoleOwner  Role = "owner"
	RoleEditor Role = "editor"
	RoleViewer Role = "viewer"
	// RoleLink is the holder of a media link (a viewer page or WHEP
	// client with a stream ticket, and no relay account): a grant in this
	// role names LinkPerson, and the relayed request is authorised by the
	// media ticket it carries, which the Space checks as on its own port.
	RoleLink Role = "link"
)

// LinkPerson is the person of a RoleLink grant: no one the relay knows.
const LinkPerson = "link"

// Valid reports whether r is one of the roles above.
func (r Role) Valid() bool {
	switch r {
	case RoleOwner, RoleEditor, RoleViewer, RoleLink:
		return true
	}
	return false
}

// Grant limits. A grant is short-lived: it proves who opened a stream, when
// it opened; a stream lives on past it.
const (
	// DefaultGrantTTL is how long a grant NewGrant makes is good for.
	DefaultGrantTTL = 60 * time.Second
	// MaxGrantTTL is the longest a grant may be good for; VerifyGrant
	// refuses a longer one even when its signature holds.
	MaxGrantTTL = 10 * time.Minute
	// GrantClockSkew is how far the Space's clock may be from the relay's:
	// a grant is taken this long before it was issued and after it expired.
	GrantClockSkew = 30 * time.Second
	// MaxGrantSize bounds a signed grant (format byte, length, payload,
	// signature); the stream header refuses a longer one before reading it.
	MaxGrantSize = 1024
	// MaxPersonLen bounds a person's id and display name, in bytes.
	MaxPersonLen = 128
	// maxGrantIDLen bounds a grant's id.
	maxGrantIDLen = 64
)

// grantFormat is the first byte of a signed grant. A new format gets a new
// number; VerifyGrant refuses one it does not know.
const grantFormat = 1

// grantContext is signed before the grant's bytes, so that no other
// message the relay's key ever signs can pass for a grant.
const grantContext = "cua-relay grant v1\x00"

// grantOverhead is what a signed grant adds to its payload: the format
// byte, the payload's length (uint16, big-endian) and the signature.
const grantOverhead = 1 + 2 + ed25519.SignatureSize

// A Grant says that the relay let Person reach Computer in Role, from
// IssuedAt until ExpiresAt. The relay signs one per relayed stream.
type Grant struct {
	// ID is unique per grant, for the audit and the logs.
	ID string
	// Computer is the name the computer was registered under.
	Computer string
	// Person is the person's stable user id on the relay (KickAll is not one).
	Person string
	// PersonName is how people see them (for logs and the audit).
	PersonName string
	Role       Role
	IssuedAt   time.Time
	ExpiresAt  time.Time
	// Turn, on the grant of a stream that carries a WHEP offer, is the
	// TURN credential the Space's end of that one viewer uses: minted per
	// view, like the viewer's own.
	Turn *TurnCredential
}

// grantWire is a Grant's JSON payload: times as Unix milliseconds.
type grantWire struct {
	ID         string          `json:"id"`
	Computer   string          `json:"computer"`
	Person     string          `json:"person"`
	PersonName string          `json:"person_name"`
	Role       Role            `json:"role"`
	IssuedAt   int64           `json:"iat_ms"`
	ExpiresAt  int64           `json:"exp_ms"`
	Turn       *TurnCredential `json:"turn,omitempty"`
}

// NewGrant is a grant of DefaultGrantTTL from now, with a fresh random id.
func NewGrant(computer, person, personName string, role Role, now time.Time) Grant {
	return Grant{
		ID: rand.Text(), Computer: computer, Person: person, PersonName: personName, Role: role,
		IssuedAt: now, ExpiresAt: now.Add(DefaultGrantTTL),
	}
}

// check answers what is wrong with g's fields, or "" when nothing is; the
// caller picks the kind (a bad grant to sign is the caller's argument, a
// bad grant received is a credential refused).
func (g Grant) check() string {
	switch {
	case len(g.ID) == 0 || len(g.ID) > maxGrantIDLen || !isWord(g.ID):
		return fmt.Sprintf("id must be 1 to %d letters, digits, '-' or '_'", maxGrantIDLen)
	case CheckComputerName(g.Computer) != nil:
		return CheckComputerName(g.Computer).Error()
	case len(g.Person) == 0 || len(g.Person) > MaxPersonLen || !isIdent(g.Person) || g.Person == KickAll:
		return fmt.Sprintf("person must be a user id of 1 to %d printable ASCII characters, not %q", MaxPersonLen, KickAll)
	case len(g.PersonName) > MaxPersonLen || !isText(g.PersonName):
		return fmt.Sprintf("person_name must be at most %d bytes of UTF-8 without control characters", MaxPersonLen)
	case !g.ExpiresAt.After(g.IssuedAt):
		return "expires before it is issued"
	case g.ExpiresAt.Sub(g.IssuedAt) > MaxGrantTTL:
		return fmt.Sprintf("good for %s, longer than the %s allowed", g.ExpiresAt.Sub(g.IssuedAt), MaxGrantTTL)
	case g.Role == RoleLink && g.Person != LinkPerson:
		return fmt.Sprintf("a %s grant names person %q, not %q", RoleLink, LinkPerson, g.Person)
	case g.Turn != nil && g.Turn.check() != "":
		return "turn: " + g.Turn.check()
	}
	return ""
}

// SignGrant is the relay's side: g, signed with priv, in the bytes a
// stream Header carries.
func SignGrant(priv ed25519.PrivateKey, g Grant) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, api.Errorf(api.KindInvalidArgument, "sign grant: a private key of %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if !g.Role.Valid() {
		return nil, api.Errorf(api.KindInvalidArgument, "sign grant: role %q: want owner, editor, viewer or link", g.Role)
	}
	if msg := g.check(); msg != "" {
		return nil, api.Errorf(api.KindInvalidArgument, "sign grant: %s", msg)
	}
	payload, err := json.Marshal(grantWire{
		ID: g.ID, Computer: g.Computer, Person: g.Person, PersonName: g.PersonName, Role: g.Role,
		IssuedAt: g.IssuedAt.UnixMilli(), ExpiresAt: g.ExpiresAt.UnixMilli(), Turn: g.Turn,
	})
	if err != nil {
		return nil, api.Errorf(api.KindJSON, "sign grant: %w", err)
	}
	return signGrantPayload(priv, payload)
}

// signGrantPayload frames and signs payload as is (tests sign odd payloads
// with it, to reach the checks behind the signature).
func signGrantPayload(priv ed25519.PrivateKey, payload []byte) ([]byte, error) {
	if len(payload)+grantOverhead > MaxGrantSize {
		return nil, api.Errorf(api.KindInvalidArgument, "sign grant: %d bytes signed, over the %d allowed; shorten the names", len(payload)+grantOverhead, MaxGrantSize)
	}
	b := make([]byte, 0, len(payload)+grantOverhead)
	b = append(b, grantFormat)
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	b = append(b, payload...)
	return append(b, ed25519.Sign(priv, signedGrantBytes(b))...), nil
}

func signedGrantBytes(body []byte) []byte {
	return append([]byte(grantContext), body...)
}

// VerifyGrant is the Space's side: it answers the grant in b when the
// relay's key pub signed it, it names computer, and it is good at now
// (give or take GrantClockSkew). A grant that fails is unauthenticated; a
// well-signed one whose role this build does not know is permission_denied.
// It reads no field before the signature holds.
func VerifyGrant(pub ed25519.PublicKey, b []byte, computer string, now time.Time) (Grant, error) {
	refuse := func(format string, args ...any) (Grant, error) {
		return Grant{}, api.Errorf(api.KindUnauthenticated, "relay grant refused: "+format, args...).
			WithHint("the relay signs a fresh grant per stream; check the Space's and the relay's clocks, and that the Space pinned this relay's key")
	}
	if len(pub) != ed25519.PublicKeySize {
		return refuse("the pinned relay key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if len(b) < grantOverhead || len(b) > MaxGrantSize {
		return refuse("%d bytes, want %d to %d", len(b), grantOverhead, MaxGrantSize)
	}
	if b[0] != grantFormat {
		return refuse("format %d, this Space knows %d", b[0], grantFormat)
	}
	n := int(binary.BigEndian.Uint16(b[1:3]))
	if 3+n+ed25519.SignatureSize != len(b) {
		return refuse("payload length %d does not fit its %d bytes", n, len(b))
	}
	body, sig := b[:3+n], b[3+n:]
	if !ed25519.Verify(pub, signedGrantBytes(body), sig) {
		return refuse("bad signature (not signed by the relay key this Space pinned)")
	}
	var w grantWire
	if err := strictJSON(body[3:], &w); err != nil {
		return refuse("payload: %v", err)
	}
	g := Grant{
		ID: w.ID, Computer: w.Computer, Person: w.Person, PersonName: w.PersonName, Role: w.Role,
		IssuedAt: time.UnixMilli(w.IssuedAt), ExpiresAt: time.UnixMilli(w.ExpiresAt), Turn: w.Turn,
	}
	if msg := g.check(); msg != "" {
		return refuse("%s", msg)
	}
	if g.Computer != computer {
		return refuse("it names computer %q, not this one (%q)", g.Computer, computer)
	}
	if now.Add(GrantClockSkew).Before(g.IssuedAt) {
		return refuse("issued %s in the future", g.IssuedAt.Sub(now).Round(time.Millisecond))
	}
	if now.Add(-GrantClockSkew).After(g.ExpiresAt) {
		return refuse("expired %s ago", now.Sub(g.ExpiresAt).Round(time.Millisecond))
	}
	if !g.Role.Valid() {
		return Grant{}, api.Errorf(api.KindPermissionDenied, "relay grant for %s: role %q is not one this Space knows (owner, editor, viewer, link)", g.Person, g.Role)
	}
	return g, nil
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// GrantKeyPrefix spells a relay's Ed25519 grant key as text: in the
// Space's relay.json and status, and in the relay's /health, so that a
// bridge tells whether a Space is attached to this very relay.
const GrantKeyPrefix = "ed25519:"

// FormatGrantKey spells k as GrantKeyPrefix + base64.
func FormatGrantKey(k ed25519.PublicKey) string {
	return GrantKeyPrefix + base64.StdEncoding.EncodeToString(k)
}

// ParseGrantKey reads what FormatGrantKey wrote.
func ParseGrantKey(s string) (ed25519.PublicKey, error) {
	b64, ok := strings.CutPrefix(s, GrantKeyPrefix)
	b, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(b) != ed25519.PublicKeySize {
		return nil, api.Errorf(api.KindInvalidArgument, "grant key %.80q: want %s and %d bytes in base64", s, GrantKeyPrefix, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}
