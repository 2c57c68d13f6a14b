package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
)

// A Ticket is a short-lived grant that a holder of the token hands to
// someone who must not have the token: a viewer page, a person a stream
// is shared with. It names what it opens (Scope, Target) and how
// (ViewOnly), and is signed with a key derived from the current token, so
// that a rotation of the token kills every ticket minted under the old
// one. Tickets travel as Authorization: Bearer, never in a URL (URLs end
// up in logs and browser histories).
type Ticket struct {
	// Scope is the kind of route the ticket opens (TicketScopeStream); a
	// Route names the scope it accepts.
	Scope string `json:"s"`
	// Target is what within the scope ("screen", "window:123"); the
	// service that serves the route checks it.
	Target   string `json:"t"`
	ViewOnly bool   `json:"v,omitempty"`
	// Expires is when the ticket stops opening routes (Unix seconds on
	// the wire).
	Expires time.Time `json:"-"`
	// Epoch is the epoch of the token it was minted under (see Auth): a
	// ticket opens routes only while that token is installed, so a
	// rotation kills it, even one back to the same token, while a
	// restart of the daemon with the same token does not.
	Epoch int64 `json:"g"`
	// ID names the grant: MintTicket draws one unless it is given, and a
	// renewal carries the ID of the ticket it renews, so that what a
	// ticket may hold (its viewers, its sessions) is the same for the
	// ticket and all its renewals.
	ID string `json:"i,omitempty"`
	// Person and Role are the principal that minted the ticket through
	// the relay ("" by the token): a kick of that person (Server.Kick)
	// ends the streams the ticket opened, and a viewer's ticket is
	// view-only whatever its holder asks. Signed with the rest: a holder
	// cannot take its name off.
	Person string `json:"p,omitempty"`
	Role   Role   `json:"r,omitempty"`
	// PersonName is how people see Person (the relay's user name): the
	// name a viewer's presence shows others. Cut to MaxTicketPersonName
	// bytes, so that a ticket stays within what VerifyTicket reads.
	PersonName string `json:"pn,omitempty"`
	// Issued is when a person's ticket was minted (MintTicket sets it):
	// a kick refuses that person's tickets minted before it.
	Issued time.Time `json:"-"`
}

// MaxTicketPersonName bounds Ticket.PersonName (bytes, cut at a rune):
// room enough for a name, and with JSON's escapes the ticket stays under
// maxTicketBytes.
const MaxTicketPersonName = 64

// ticketIDBytes is the size of a drawn Ticket.ID: unguessable, though a
// ticket's ID is no secret (its payload is readable by its holder).
const ticketIDBytes = 12

// TicketScopeStream is the scope of media tickets (desktop and window streams).
const TicketScopeStream = "stream"

// ticketPrefix starts every ticket, so that a bearer value is told from
// a token without trying a signature, and a ticket format change is a
// new prefix.
const ticketPrefix = "cuat1."

// maxTicketBytes bounds a presented ticket before any decoding.
const maxTicketBytes = 1024

// ticketKeyLabel is the fixed input from which the ticket key is derived
// (HMAC of the token's digest): the token itself is never kept, and the
// key is no hash anyone sends.
const ticketKeyLabel = "cua-spacesd ticket key v1"

// maxRetiredTicketKeys is how many rotations back a ticket is still told
// as one of an old token ("minted before the token was rotated") rather
// than as a forgery. A key is 32 bytes; an old token's key verifies
// nothing else.
const maxRetiredTicketKeys = 8

type ticketWire struct {
	Ticket
	Exp int64 `json:"e"`
	// Issued: Unix nanoseconds, of a person's ticket only (to the
	// nanosecond: a ticket minted just after a kick must not be taken
	// for one minted before).
	Issued int64 `json:"n,omitempty"`
}

// ticketKey derives the signing key of the current token. The caller holds a.mu.
func (a *Auth) ticketKey() []byte {
	m := hmac.New(sha256.New, a.digest[:])
	m.Write([]byte(ticketKeyLabel))
	return m.Sum(nil)
}

// MintTicket signs t under the current token; its Epoch is set here.
func (a *Auth) MintTicket(t Ticket) (string, error) {
	if t.ID == "" {
		b := make([]byte, ticketIDBytes)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		t.ID = base64.RawURLEncoding.EncodeToString(b)
	}
	t.PersonName = cutName(t.PersonName)
	a.mu.Lock()
	t.Epoch = a.epoch
	key := a.ticketKey()
	a.mu.Unlock()
	w := ticketWire{Ticket: t, Exp: t.Expires.Unix()}
	if t.Person != "" {
		w.Issued = time.Now().UnixNano()
	}
	payload, err := json.Marshal(w)
	if err != nil {
		return "", err
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return ticketPrefix + p + "." + base64.RawURLEncoding.EncodeToString(sign(key, p)), nil
}

func sign(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// IsTicket reports whether a bearer value is in the ticket format.
func IsTicket(bearer string) bool { return strings.HasPrefix(bearer, ticketPrefix) }

var errBadTicket = api.Errorf(api.KindUnauthenticated, "the ticket is malformed or its signature does not match").
	WithHint("mint a new ticket with the Space's token (POST /v1/stream/tickets)")

var errRotatedTicket = api.Errorf(api.KindUnauthenticated, "the ticket was minted before the token was rotated").
	WithHint("mint a new ticket with the current token")

// VerifyTicket checks a presented ticket's signature, expiry and token
// epoch at now.
func (a *Auth) VerifyTicket(s string, now time.Time) (Ticket, error) {
	t, _, err := a.verifyTicket(s, now)
	return t, err
}

// verifyTicket is VerifyTicket answering also the generation of the token
// the ticket was verified under, for the session of its request.
func (a *Auth) verifyTicket(s string, now time.Time) (Ticket, uint64, error) {
	rest, ok := strings.CutPrefix(s, ticketPrefix)
	if !ok || len(s) > maxTicketBytes {
		return Ticket{}, 0, errBadTicket
	}
	p, mac, ok := strings.Cut(rest, ".")
	if !ok {
		return Ticket{}, 0, errBadTicket
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil {
		return Ticket{}, 0, errBadTicket
	}
	a.mu.Lock()
	key, epoch, gen, retired := a.ticketKey(), a.epoch, a.generation, a.retired
	a.mu.Unlock()
	// The signature first: nothing of an unsigned payload is believed.
	if !hmac.Equal(got, sign(key, p)) {
		// A ticket of an old token fails here: the key changed with it.
		// One that an old key of this process signed says so.
		for _, old := range retired {
			if hmac.Equal(got, sign(old, p)) {
				return Ticket{}, 0, errRotatedTicket
			}
		}
		return Ticket{}, 0, errBadTicket
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Ticket{}, 0, errBadTicket
	}
	var w ticketWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return Ticket{}, 0, errBadTicket
	}
	t := w.Ticket
	t.Expires = time.Unix(w.Exp, 0)
	if w.Issued != 0 {
		t.Issued = time.Unix(0, w.Issued)
	}
	if t.ID == "" {
		// Minted by a daemon from before IDs: its signed payload names it.
		sum := sha256.Sum256([]byte(p))
		t.ID = base64.RawURLEncoding.EncodeToString(sum[:ticketIDBytes])
	}
	if t.Epoch != epoch {
		// The same token put back after a rotation: its old tickets stay dead.
		return Ticket{}, 0, errRotatedTicket
	}
	if !now.Before(t.Expires) {
		return Ticket{}, 0, api.Errorf(api.KindUnauthenticated, "the ticket expired at %s", t.Expires.UTC().Format(time.RFC3339)).
			WithHint("mint a new ticket with the Space's token (POST /v1/stream/tickets)")
	}
	return t, gen, nil
}

// Caller is who made a request: the holder of the token (Ticket and
// Principal nil), the bearer of a ticket, whose claims the route's service
// enforces, or a Principal its connection brought.
type Caller struct {
	// Generation is the token generation the request was authorised under.
	Generation uint64
	Ticket     *Ticket
	// Pending is set on the upgrade request of an InBandAuth route that
	// presented no credentials: the caller is not known yet, and the
	// handler must pass Host.Authenticate before it serves anything.
	Pending bool
	// Principal is the caller a connection brought (Host.ServeConn): a
	// person through the relay. nil for the token's holder and a ticket.
	Principal *Principal
	// route names the route in the log line of a failed in-band check.
	route string
}

type callerKey struct{}

// CallerOf returns the caller of a request handed to a route's handler.
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

var errTicketScope = api.Errorf(api.KindUnauthenticated, "a ticket does not open this route: tickets open only the routes of their scope").
	WithHint("call this route with the Space's token")

// cutName cuts a name to MaxTicketPersonName bytes on a rune boundary.
func cutName(s string) string {
	if len(s) <= MaxTicketPersonName {
		return s
	}
	s = s[:MaxTicketPersonName]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
