package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Name limits.
const (
	// MaxUserNameLen bounds a user's name.
	MaxUserNameLen = 64
	// MaxEmailLen bounds a user's email (RFC 5321's path limit).
	MaxEmailLen = 254
)

// User is a person the relay knows (relayapi.User is its JSON).
type User = relayapi.User

// tokenRecord is what the tokens bucket keeps under a token's hash.
type tokenRecord struct {
	// Kind is the token's kind: protocol.TokenUser or TokenComputer.
	Kind protocol.TokenKind `json:"kind"`
	// User is the user a user token is of.
	User string `json:"user,omitempty"`
	// Computer is the computer a computer token is of.
	Computer  string `json:"computer,omitempty"`
	CreatedMS int64  `json:"created_ms"`
}

// retiredRecord remembers why a token stopped working.
type retiredRecord struct {
	Reason   string `json:"reason"` // a close code's word: token_revoked, token_rotated
	Computer string `json:"computer,omitempty"`
	User     string `json:"user,omitempty"`
}

// CheckUserName answers invalid_argument unless name is a user's name: 1
// to MaxUserNameLen letters, digits, '.', '_' or '-', starting with a
// letter or a digit (it is a NATS key and a CLI argument as is).
func CheckUserName(name string) error {
	if len(name) == 0 || len(name) > MaxUserNameLen {
		return api.Errorf(api.KindInvalidArgument, "user name: %d bytes, want 1 to %d", len(name), MaxUserNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return api.Errorf(api.KindInvalidArgument, "user name %q: use letters, digits, '.', '_' and '-', starting with a letter or a digit", name)
		}
	}
	return nil
}

func checkEmail(email string) error {
	if email == "" {
		return nil
	}
	at := strings.LastIndexByte(email, '@')
	if len(email) > MaxEmailLen || at < 1 || at == len(email)-1 || strings.ContainsFunc(email, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return api.Errorf(api.KindInvalidArgument, "email %.100q: want name@domain, at most %d bytes, no spaces", email, MaxEmailLen)
	}
	return nil
}

func hashKey(token string) string {
	h := protocol.HashToken(token)
	return hex.EncodeToString(h[:])
}

// CreateUser adds a user; a name taken is invalid_argument with reason
// exists.
func (s *Store) CreateUser(ctx context.Context, name, email string) (User, error) {
	if err := CheckUserName(name); err != nil {
		return User{}, err
	}
	if err := checkEmail(email); err != nil {
		return User{}, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	u := User{ID: "u_" + strings.ToLower(rand.Text()), Name: name, Email: email, CreatedMS: s.now().UnixMilli()}
	if _, err := s.userNames.Create(ctx, name, []byte(u.ID)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return User{}, api.Errorf(api.KindInvalidArgument, "user %q exists already", name).WithReason("exists")
		}
		return User{}, storeErr("add user "+name, err)
	}
	if err := s.putJSON(ctx, s.users, u.ID, u); err != nil {
		_ = s.userNames.Delete(ctx, name)
		return User{}, err
	}
	return u, nil
}

// User answers the user of id (not_found when there is none).
func (s *Store) User(ctx context.Context, id string) (User, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	var u User
	if err := mirrorJSON(ctx, s.userMirror, id, &u); err != nil {
		return User{}, notFound(err, "user %s", id)
	}
	return u, nil
}

// UserByName answers the user named name.
func (s *Store) UserByName(ctx context.Context, name string) (User, error) {
	if err := CheckUserName(name); err != nil {
		return User{}, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	e, err := s.userNames.Get(ctx, name)
	if err != nil {
		return User{}, notFound(err, "user %q", name)
	}
	return s.User(ctx, string(e.Value()))
}

// Users lists every user, by name.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	var out []User
	err := s.each(ctx, s.users, func(_ string, b []byte) error {
		var u User
		if err := json.Unmarshal(b, &u); err != nil {
			return err
		}
		out = append(out, u)
		return nil
	})
	sortBy(out, func(u User) string { return u.Name })
	return out, err
}

// DeleteUser removes the user, their tokens and their computers; it
// answers the names of the computers removed (their sessions must end).
func (s *Store) DeleteUser(ctx context.Context, name string) ([]string, error) {
	u, err := s.UserByName(ctx, name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	// The name goes first: from here on, the user cannot be found by it.
	if err := s.userNames.Delete(ctx, name); err != nil {
		return nil, storeErr("remove user "+name, err)
	}
	var gone []string
	comps, err := s.computersOf(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range comps {
		if err := s.deleteComputer(ctx, c, protocol.CloseTokenRevoked.String()); err != nil {
			return gone, err
		}
		gone = append(gone, c.Name)
	}
	err = s.each(ctx, s.tokens, func(key string, b []byte) error {
		var t tokenRecord
		if json.Unmarshal(b, &t) == nil && t.Kind == protocol.TokenUser && t.User == u.ID {
			return s.retire(ctx, key, retiredRecord{Reason: protocol.CloseTokenRevoked.String(), User: u.ID})
		}
		return nil
	})
	if err != nil {
		return gone, err
	}
	if team, err := s.TeamOf(ctx, u.ID); err == nil && team != "" {
		if _, err := s.removeMember(ctx, team, u.ID); err != nil && api.KindOf(err) != api.KindNotFound {
			return gone, err
		}
	}
	if err := s.users.Delete(ctx, u.ID); err != nil {
		return gone, storeErr("remove user "+name, err)
	}
	s.userMirror.forget(u.ID)
	return gone, nil
}

// CreateUserToken makes an API token for the user named name; the token is
// answered this once, and only its hash is kept.
func (s *Store) CreateUserToken(ctx context.Context, name string) (User, string, error) {
	u, err := s.UserByName(ctx, name)
	if err != nil {
		return User{}, "", err
	}
	tok, err := protocol.NewToken(protocol.TokenUser)
	if err != nil {
		return User{}, "", err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	rec := tokenRecord{Kind: protocol.TokenUser, User: u.ID, CreatedMS: s.now().UnixMilli()}
	if err := s.createJSON(ctx, s.tokens, hashKey(tok), rec); err != nil {
		return User{}, "", err
	}
	return u, tok, nil
}

// UserByToken answers the user whose API token this is. Anything else is
// unauthenticated with the close code's word as its reason (token_invalid,
// token_revoked).
func (s *Store) UserByToken(ctx context.Context, token string) (User, error) {
	rec, err := s.lookupToken(ctx, token, protocol.TokenUser, s.tokenMirror.get)
	if err != nil {
		return User{}, err
	}
	u, err := s.User(ctx, rec.User)
	if api.KindOf(err) == api.KindNotFound {
		return User{}, tokenRefused(protocol.CloseTokenRevoked, "its user was removed")
	}
	return u, err
}

// lookupToken finds the record of token, of kind want, reading the token
// bucket with get (its mirror's, or the bucket's own).
func (s *Store) lookupToken(ctx context.Context, token string, want protocol.TokenKind,
	get func(context.Context, string) ([]byte, error)) (tokenRecord, error) {
	if k, err := protocol.ParseToken(token); err != nil || k != want {
		return tokenRecord{}, tokenRefused(protocol.CloseTokenInvalid, "not a "+string(want)+"_ token")
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	key := hashKey(token)
	v, err := get(ctx, key)
	if err == nil {
		var rec tokenRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return tokenRecord{}, storeErr("read a token record", err)
		}
		if rec.Kind != want {
			return tokenRecord{}, tokenRefused(protocol.CloseTokenInvalid, "unknown token")
		}
		return rec, nil
	}
	if !isNotFound(err) {
		return tokenRecord{}, storeErr("look up a token", err)
	}
	var r retiredRecord
	if _, err := s.getJSON(ctx, s.retired, key, &r); err == nil {
		switch r.Reason {
		case protocol.CloseTokenRotated.String():
			return tokenRecord{}, tokenRefused(protocol.CloseTokenRotated, "a newer token replaced it")
		default:
			return tokenRecord{}, tokenRefused(protocol.CloseTokenRevoked, "it was revoked")
		}
	}
	return tokenRecord{}, tokenRefused(protocol.CloseTokenInvalid, "unknown token")
}

// tokenRefused is the error of a token that does not open anything: its
// reason is the close code's word, for the 401's envelope.
func tokenRefused(code protocol.CloseCode, why string) *api.Error {
	return api.Errorf(api.KindUnauthenticated, "relay token refused: %s: %s", code, why).WithReason(code.String())
}

// retire moves a token's hash from the tokens to the retired bucket.
func (s *Store) retire(ctx context.Context, key string, r retiredRecord) error {
	if err := s.putJSON(ctx, s.retired, key, r); err != nil {
		return err
	}
	if err := s.tokens.Delete(ctx, key); err != nil && !isNotFound(err) {
		return storeErr("retire a token", err)
	}
	s.tokenMirror.forget(key)
	return nil
}
