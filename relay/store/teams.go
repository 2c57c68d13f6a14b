package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Team is a team as the API shows it (members by name).
type Team = relayapi.Team

// teamRecord is what the teams bucket keeps: members by user id.
type teamRecord struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Members   []string `json:"members"`
	CreatedMS int64    `json:"created_ms"`
}

// CreateTeam adds a team. Its id is its name (checked as a user's name),
// so "team:<id>" is what an admin typed; a name taken is invalid_argument
// with reason exists.
func (s *Store) CreateTeam(ctx context.Context, name string) (Team, error) {
	if err := CheckUserName(name); err != nil {
		return Team{}, api.Errorf(api.KindInvalidArgument, "team name: %s", api.AsError(err).Message)
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	t := teamRecord{ID: name, Name: name, Members: []string{}, CreatedMS: s.now().UnixMilli()}
	b, _ := json.Marshal(t)
	if _, err := s.teams.Create(ctx, t.ID, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Team{}, api.Errorf(api.KindInvalidArgument, "team %q exists already", name).WithReason("exists")
		}
		return Team{}, storeErr("add team "+name, err)
	}
	return s.teamJSON(ctx, t), nil
}

// Teams lists every team, by name.
func (s *Store) Teams(ctx context.Context) ([]Team, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	var recs []teamRecord
	err := s.each(ctx, s.teams, func(_ string, b []byte) error {
		var t teamRecord
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		recs = append(recs, t)
		return nil
	})
	out := make([]Team, 0, len(recs))
	for _, t := range recs {
		out = append(out, s.teamJSON(ctx, t))
	}
	sortBy(out, func(t Team) string { return t.Name })
	return out, err
}

// TeamMembers answers the user ids of team id's members (not_found when
// there is no such team).
func (s *Store) TeamMembers(ctx context.Context, id string) ([]string, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	var t teamRecord
	if _, err := s.getJSON(ctx, s.teams, id, &t); err != nil {
		return nil, notFound(err, "team %q", id)
	}
	return t.Members, nil
}

// TeamOf answers the id of the team of user id, "" when they are in none.
func (s *Store) TeamOf(ctx context.Context, userID string) (string, error) {
	ctx, cancel := opContext(ctx)
	defer cancel()
	e, err := s.userTeams.Get(ctx, userID)
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", storeErr("read a user's team", err)
	}
	return string(e.Value()), nil
}

// AddTeamMember puts the user named user in team id. A user in another
// team is invalid_argument with reason in_team: a user is in at most one.
func (s *Store) AddTeamMember(ctx context.Context, id, user string) (Team, error) {
	u, err := s.UserByName(ctx, user)
	if err != nil {
		return Team{}, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	if _, err := s.getJSON(ctx, s.teams, id, &teamRecord{}); err != nil {
		return Team{}, notFound(err, "team %q", id)
	}
	// The user's key first: Create makes "at most one team" hold when two
	// admins add the same user at once.
	if _, err := s.userTeams.Create(ctx, u.ID, []byte(id)); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return Team{}, storeErr("add a team member", err)
		}
		if cur, _ := s.TeamOf(ctx, u.ID); cur != id {
			return Team{}, api.Errorf(api.KindInvalidArgument, "user %q is in team %q already; a user is in at most one team", user, cur).WithReason("in_team")
		}
	}
	return s.updateTeam(ctx, id, func(t *teamRecord) {
		if !slices.Contains(t.Members, u.ID) {
			t.Members = append(t.Members, u.ID)
		}
	})
}

// RemoveTeamMember takes the user named user out of team id.
func (s *Store) RemoveTeamMember(ctx context.Context, id, user string) (Team, error) {
	u, err := s.UserByName(ctx, user)
	if err != nil {
		return Team{}, err
	}
	ctx, cancel := opContext(ctx)
	defer cancel()
	if cur, err := s.TeamOf(ctx, u.ID); err != nil {
		return Team{}, err
	} else if cur != id {
		return Team{}, api.Errorf(api.KindNotFound, "user %q is not in team %q", user, id)
	}
	return s.removeMember(ctx, id, u.ID)
}

func (s *Store) removeMember(ctx context.Context, id, userID string) (Team, error) {
	t, err := s.updateTeam(ctx, id, func(t *teamRecord) {
		t.Members = slices.DeleteFunc(t.Members, func(m string) bool { return m == userID })
	})
	if err != nil {
		return Team{}, err
	}
	if err := s.userTeams.Delete(ctx, userID); err != nil && !isNotFound(err) {
		return Team{}, storeErr("remove a team member", err)
	}
	return t, nil
}

// updateTeam changes team id on the revision read, retrying a few times
// when another change came between.
func (s *Store) updateTeam(ctx context.Context, id string, change func(*teamRecord)) (Team, error) {
	for range 5 {
		var t teamRecord
		rev, err := s.getJSON(ctx, s.teams, id, &t)
		if err != nil {
			return Team{}, notFound(err, "team %q", id)
		}
		change(&t)
		b, _ := json.Marshal(t)
		if _, err := s.teams.Update(ctx, id, b, rev); err == nil {
			return s.teamJSON(ctx, t), nil
		}
	}
	return Team{}, api.Errorf(api.KindRelay, "team %q changed meanwhile; try again", id)
}

// teamJSON is t with its members' names (a removed user's id stays as is).
func (s *Store) teamJSON(ctx context.Context, t teamRecord) Team {
	out := Team{ID: t.ID, Name: t.Name, Members: make([]string, 0, len(t.Members))}
	for _, id := range t.Members {
		if u, err := s.User(ctx, id); err == nil {
			out.Members = append(out.Members, u.Name)
		} else {
			out.Members = append(out.Members, id)
		}
	}
	slices.Sort(out.Members)
	return out
}
