package store

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// ShareEntry is one share of a computer as the store keeps it: Who is a
// user id, or relayapi.TeamPrefix + a team id.
type ShareEntry struct {
	Who       string        `json:"who"`
	Role      protocol.Role `json:"role"`
	CreatedMS int64         `json:"created_ms"`
}

// Team reports whether e names a whole team, and which.
func (e ShareEntry) Team() (string, bool) { return strings.CutPrefix(e.Who, relayapi.TeamPrefix) }

// shareRecord is what the shares bucket keeps under a computer's name.
type shareRecord struct {
	Shares []ShareEntry `json:"shares"`
}

// Shares answers the shares of computer, in the order they were made.
func (s *Store) Shares(ctx context.Context, computer string) ([]ShareEntry, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	var r shareRecord
	if _, err := s.getJSON(ctx, s.shares, computer, &r); err != nil && !isNotFound(err) {
		return nil, storeErr("read the shares of "+computer, err)
	}
	return r.Shares, nil
}

// PutShare shares computer with who (a user id or TeamPrefix + team id) as
// role; a share that exists gets the new role. It answers the role it had
// before ("" for a new share).
func (s *Store) PutShare(ctx context.Context, computer, who string, role protocol.Role) (protocol.Role, error) {
	var before protocol.Role
	err := s.updateShares(ctx, computer, func(r *shareRecord) {
		before = ""
		for i := range r.Shares {
			if r.Shares[i].Who == who {
				before, r.Shares[i].Role = r.Shares[i].Role, role
				return
			}
		}
		r.Shares = append(r.Shares, ShareEntry{Who: who, Role: role, CreatedMS: s.now().UnixMilli()})
	})
	return before, err
}

// DeleteShares ends the share of who on computer, or every share when who
// is ""; it answers the shares that ended.
func (s *Store) DeleteShares(ctx context.Context, computer, who string) ([]ShareEntry, error) {
	var gone []ShareEntry
	err := s.updateShares(ctx, computer, func(r *shareRecord) {
		gone = nil
		r.Shares = slices.DeleteFunc(r.Shares, func(e ShareEntry) bool {
			if who == "" || e.Who == who {
				gone = append(gone, e)
				return true
			}
			return false
		})
	})
	return gone, err
}

// updateShares changes computer's shares on the revision read (Create for
// the first), retrying a few times when another change came between.
func (s *Store) updateShares(ctx context.Context, computer string, change func(*shareRecord)) error {
	ctx, cancel := opContext(ctx)
	defer cancel()
	for range 5 {
		var r shareRecord
		rev, err := s.getJSON(ctx, s.shares, computer, &r)
		if err != nil && !isNotFound(err) {
			return storeErr("read the shares of "+computer, err)
		}
		change(&r)
		b, _ := json.Marshal(r)
		if rev == 0 {
			_, err = s.shares.Create(ctx, computer, b)
		} else {
			_, err = s.shares.Update(ctx, computer, b, rev)
		}
		if err == nil {
			return nil
		}
	}
	return api.Errorf(api.KindRelay, "the shares of %q changed meanwhile; try again", computer)
}

// RoleOf answers the role a share gives user userID on computer: their
// own share, or their team's; of both, the stronger (editor). "" when the
// computer is not shared with them.
func (s *Store) RoleOf(ctx context.Context, computer, userID string) (protocol.Role, error) {
	shares, err := s.Shares(ctx, computer)
	if err != nil || len(shares) == 0 {
		return "", err
	}
	team, err := s.TeamOf(ctx, userID)
	if err != nil {
		return "", err
	}
	return roleIn(shares, userID, team), nil
}

func roleIn(shares []ShareEntry, userID, team string) protocol.Role {
	var role protocol.Role
	for _, e := range shares {
		if e.Who == userID || team != "" && e.Who == relayapi.TeamPrefix+team {
			if role == "" || e.Role == protocol.RoleEditor {
				role = e.Role
			}
		}
	}
	return role
}

// SharedWith answers the computers shared with user userID and the role
// each gives them.
func (s *Store) SharedWith(ctx context.Context, userID string) (map[string]protocol.Role, error) {
	team, err := s.TeamOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	out := map[string]protocol.Role{}
	err = s.each(ctx, s.shares, func(name string, b []byte) error {
		var r shareRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if role := roleIn(r.Shares, userID, team); role != "" {
			out[name] = role
		}
		return nil
	})
	return out, err
}

// UserByEmail answers the user whose email is email (case-insensitive),
// not_found when there is none.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	us, err := s.Users(ctx)
	if err != nil {
		return User{}, err
	}
	for _, u := range us {
		if u.Email != "" && strings.EqualFold(u.Email, email) {
			return u, nil
		}
	}
	return User{}, api.Errorf(api.KindNotFound, "no user with email %.100q", email)
}

// ComputerAudit answers the newest n audit lines of computer, oldest
// first, from the last scan lines of the audit.
func (s *Store) ComputerAudit(ctx context.Context, computer string, n, scan int) ([]AuditEntry, error) {
	all, err := s.AuditEntries(ctx, scan)
	if err != nil {
		return nil, err
	}
	all = slices.DeleteFunc(all, func(e AuditEntry) bool { return e.Space != computer })
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all, nil
}
