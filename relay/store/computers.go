package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// Computer is a registered computer: a Space the relay reaches.
type Computer struct {
	Name string `json:"name"`
	// Owner is the owning user's id.
	Owner string `json:"owner"`
	// TokenHash is hex(protocol.HashToken) of its computer token.
	TokenHash string `json:"token_hash"`
	CreatedMS int64  `json:"created_ms"`
	// RotatedMS is when its token last changed (0: never).
	RotatedMS int64 `json:"rotated_ms,omitempty"`
}

// PutComputer creates the computer name for owner (a user id) and answers
// its new token, shown this once. A name the owner holds already gets a new
// token (rotated: the old one now answers token_rotated); a name another
// user holds is invalid_argument with reason exists (names are unique
// across the relay, and this does not say whose it is).
func (s *Store) PutComputer(ctx context.Context, owner, name string) (c Computer, token string, rotated bool, err error) {
	if err := protocol.CheckComputerName(name); err != nil {
		return Computer{}, "", false, err
	}
	tok, err := protocol.NewToken(protocol.TokenComputer)
	if err != nil {
		return Computer{}, "", false, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	key := hashKey(tok)
	now := s.now().UnixMilli()
	// The token's record goes first: a computer record never names a hash
	// that does not open it.
	if err := s.createJSON(ctx, s.tokens, key, tokenRecord{Kind: protocol.TokenComputer, Computer: name, CreatedMS: now}); err != nil {
		return Computer{}, "", false, err
	}
	undo := func() { _ = s.tokens.Delete(ctx, key) }
	c = Computer{Name: name, Owner: owner, TokenHash: key, CreatedMS: now}
	b, _ := json.Marshal(c)
	if _, err := s.computers.Create(ctx, name, b); err == nil {
		return c, tok, false, nil
	} else if !errors.Is(err, jetstream.ErrKeyExists) {
		undo()
		return Computer{}, "", false, storeErr("add computer "+name, err)
	}
	var old Computer
	rev, err := s.getJSON(ctx, s.computers, name, &old)
	if err != nil || old.Owner != owner {
		undo()
		if err != nil && !isNotFound(err) {
			return Computer{}, "", false, storeErr("read computer "+name, err)
		}
		return Computer{}, "", false, api.Errorf(api.KindInvalidArgument, "computer name %q is taken on this relay; choose another", name).WithReason("exists")
	}
	c.CreatedMS, c.RotatedMS = old.CreatedMS, now
	b, _ = json.Marshal(c)
	// Update on the revision read: of two rotations at once, one wins and
	// the other is told to try again.
	if _, err := s.computers.Update(ctx, name, b, rev); err != nil {
		undo()
		return Computer{}, "", false, api.Errorf(api.KindRelay, "computer %q changed meanwhile; try again", name)
	}
	if err := s.retire(ctx, old.TokenHash, retiredRecord{Reason: protocol.CloseTokenRotated.String(), Computer: name}); err != nil {
		return Computer{}, "", false, err
	}
	return c, tok, true, nil
}

// Computer answers the computer name (not_found when there is none).
func (s *Store) Computer(ctx context.Context, name string) (Computer, error) {
	if err := protocol.CheckComputerName(name); err != nil {
		return Computer{}, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	var c Computer
	if err := mirrorJSON(ctx, s.computerMirror, name, &c); err != nil {
		return Computer{}, notFound(err, "computer %q", name)
	}
	return c, nil
}

// Computers lists every computer, by name; with owner != "", only theirs.
func (s *Store) Computers(ctx context.Context, owner string) ([]Computer, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	return s.computersOf(ctx, owner)
}

func (s *Store) computersOf(ctx context.Context, owner string) ([]Computer, error) {
	var out []Computer
	err := s.each(ctx, s.computers, func(_ string, b []byte) error {
		var c Computer
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		if owner == "" || c.Owner == owner {
			out = append(out, c)
		}
		return nil
	})
	sortBy(out, func(c Computer) string { return c.Name })
	return out, err
}

// DeleteComputer removes the computer name; its token then answers
// token_revoked.
func (s *Store) DeleteComputer(ctx context.Context, name string) error {
	c, err := s.Computer(ctx, name)
	if err != nil {
		return err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	return s.deleteComputer(ctx, c, protocol.CloseTokenRevoked.String())
}

func (s *Store) deleteComputer(ctx context.Context, c Computer, reason string) error {
	if err := s.retire(ctx, c.TokenHash, retiredRecord{Reason: reason, Computer: c.Name}); err != nil {
		return err
	}
	if err := s.computers.Delete(ctx, c.Name); err != nil && !isNotFound(err) {
		return storeErr("remove computer "+c.Name, err)
	}
	s.computerMirror.forget(c.Name)
	// Its shares go with it: a name registered again starts unshared.
	if err := s.shares.Delete(ctx, c.Name); err != nil && !isNotFound(err) {
		return storeErr("remove the shares of "+c.Name, err)
	}
	return nil
}

// ComputerByToken answers the computer whose token this is. Anything else
// is unauthenticated with reason token_invalid, token_revoked or
// token_rotated.
//
// The mirrors answer first: at attach, the buckets' answer waits on their
// streams' leaders, and after a node of a cluster died that is the
// election of new ones (10-15 s of held attaches in the 10,000-computer
// bench), while the mirrors hold what the watch delivered. A token the
// mirrors do not open is read from the buckets themselves: a Space
// attaching with a token a rotation made a moment ago must not meet the
// record the rotation replaced. A token revoked on another node opens an
// attach for as long as the watch takes to deliver the revocation
// (milliseconds), as it opens a relayed request.
func (s *Store) ComputerByToken(ctx context.Context, token string) (Computer, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	fromMirrors := func(ctx context.Context, name string, c *Computer) error {
		return mirrorJSON(ctx, s.computerMirror, name, c)
	}
	if c, err := s.computerByToken(ctx, token, s.tokenMirror.get, fromMirrors); err == nil {
		return c, nil
	}
	fromBuckets := func(ctx context.Context, name string, c *Computer) error {
		_, err := s.getJSON(ctx, s.computers, name, c)
		return err
	}
	return s.computerByToken(ctx, token, func(ctx context.Context, key string) ([]byte, error) {
		e, err := s.tokens.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		return e.Value(), nil
	}, fromBuckets)
}

// computerByToken is ComputerByToken over one way of reading the records.
func (s *Store) computerByToken(ctx context.Context, token string,
	getToken func(context.Context, string) ([]byte, error), getComputer func(context.Context, string, *Computer) error) (Computer, error) {
	rec, err := s.lookupToken(ctx, token, protocol.TokenComputer, getToken)
	if err != nil {
		return Computer{}, err
	}
	var c Computer
	err = getComputer(ctx, rec.Computer, &c)
	if err != nil {
		err = notFound(err, "computer %q", rec.Computer)
	}
	if api.KindOf(err) == api.KindNotFound {
		return Computer{}, tokenRefused(protocol.CloseTokenRevoked, "its computer was removed")
	}
	if err != nil {
		return Computer{}, err
	}
	// The record found by the hash must be the computer's current token:
	// compared in constant time, as every secret is.
	stored, err := hex.DecodeString(c.TokenHash)
	if err != nil || len(stored) != 32 || !protocol.TokenEqual([32]byte(stored), token) {
		return Computer{}, tokenRefused(protocol.CloseTokenRotated, "a newer token replaced it")
	}
	return c, nil
}

// --- helpers over the buckets ---

func (s *Store) putJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return api.Errorf(api.KindJSON, "relay store: encode %s: %w", key, err)
	}
	if _, err := kv.Put(ctx, key, b); err != nil {
		return storeErr("write "+kv.Bucket(), err)
	}
	return nil
}

func (s *Store) createJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return api.Errorf(api.KindJSON, "relay store: encode %s: %w", key, err)
	}
	if _, err := kv.Create(ctx, key, b); err != nil {
		return storeErr("write "+kv.Bucket(), err)
	}
	return nil
}

// getJSON reads key into v and answers its revision; a missing key is
// jetstream.ErrKeyNotFound (isNotFound).
func (s *Store) getJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) (uint64, error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, storeErr("read "+kv.Bucket()+" "+key, err)
	}
	return e.Revision(), nil
}

// mirrorJSON reads key through m into v.
func mirrorJSON(ctx context.Context, m *mirror, key string, v any) error {
	b, err := m.get(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return storeErr("read "+m.kv.Bucket()+" "+key, err)
	}
	return nil
}

// each calls fn with every live key and value of kv, in one pass.
func (s *Store) each(ctx context.Context, kv jetstream.KeyValue, fn func(key string, value []byte) error) error {
	// The watch's consumer may sit on a replica that has not applied the
	// latest writes yet (a user added through another node a moment ago):
	// the listing goes on until it has seen the stream's last message as
	// its leader knows it, so that a write acknowledged anywhere is read.
	var last uint64
	if st, err := kv.Status(ctx); err == nil {
		if b, ok := st.(*jetstream.KeyValueBucketStatus); ok {
			last = b.StreamInfo().State.LastSeq
		}
	}
	w, err := kv.WatchAll(ctx) // deletes too: the last message may be one
	if err != nil {
		return storeErr("list "+kv.Bucket(), err)
	}
	defer w.Stop()
	values := map[string][]byte{}
	var seen uint64
	caughtUp := false // the watch's initial values have all come
	for !caughtUp || seen < last {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return storeErr("list "+kv.Bucket(), errors.New("watcher closed"))
			}
			if e == nil {
				caughtUp = true
				continue
			}
			seen = max(seen, e.Revision())
			if e.Operation() == jetstream.KeyValuePut {
				values[e.Key()] = e.Value()
			} else {
				delete(values, e.Key())
			}
		case <-ctx.Done():
			return storeErr("list "+kv.Bucket(), ctx.Err())
		}
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if err := fn(k, values[k]); err != nil {
			return storeErr("list "+kv.Bucket(), err)
		}
	}
	return nil
}

func isNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}

// notFound turns a missing key into not_found naming what, and any other
// failure into the store's error.
func notFound(err error, format string, args ...any) error {
	if isNotFound(err) {
		return api.Errorf(api.KindNotFound, format+": not found", args...)
	}
	if e := api.AsError(err); e.Kind == api.KindInvalidArgument {
		return e
	}
	return storeErr("read", err)
}

func sortBy[T any](s []T, key func(T) string) {
	slices.SortFunc(s, func(a, b T) int { return strings.Compare(key(a), key(b)) })
}
