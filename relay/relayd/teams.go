package relayd

import (
	"context"
	"net/http"
	"strings"

	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Teams on the admin socket: cua-relay team add|ls|member add|rm.

func (s *Server) adminListTeams(w http.ResponseWriter, r *http.Request) {
	ts, err := s.cfg.Store.Teams(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, relayapi.TeamList{Teams: ts})
}

func (s *Server) adminCreateTeam(w http.ResponseWriter, r *http.Request) {
	var req relayapi.CreateTeam
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	t, err := s.cfg.Store.CreateTeam(r.Context(), req.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (s *Server) adminAddMember(w http.ResponseWriter, r *http.Request) {
	var req relayapi.TeamMember
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	t, err := s.cfg.Store.AddTeamMember(r.Context(), r.PathValue("team"), req.User)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// adminRemoveMember takes a user out of a team: the team's shares stop
// reaching them, so their streams to the computers shared with the team
// (and not with them) are cut as an unshare's are.
func (s *Server) adminRemoveMember(w http.ResponseWriter, r *http.Request) {
	team, user := r.PathValue("team"), r.PathValue("user")
	u, err := s.cfg.Store.UserByName(r.Context(), user)
	if err != nil {
		writeError(w, err)
		return
	}
	t, err := s.cfg.Store.RemoveTeamMember(r.Context(), team, user)
	if err != nil {
		writeError(w, err)
		return
	}
	s.recheckPerson(r.Context(), u.ID, "left team "+team)
	writeJSON(w, http.StatusOK, t)
}

// Teams lists the teams.
func (c *AdminClient) Teams(ctx context.Context) ([]relayapi.Team, error) {
	var l relayapi.TeamList
	err := c.call(ctx, http.MethodGet, relayapi.PathAdminTeams, nil, &l)
	return l.Teams, err
}

// CreateTeam adds a team.
func (c *AdminClient) CreateTeam(ctx context.Context, name string) (relayapi.Team, error) {
	var t relayapi.Team
	err := c.call(ctx, http.MethodPost, relayapi.PathAdminTeams, relayapi.CreateTeam{Name: name}, &t)
	return t, err
}

// AddTeamMember puts a user in a team.
func (c *AdminClient) AddTeamMember(ctx context.Context, team, user string) (relayapi.Team, error) {
	var t relayapi.Team
	err := c.call(ctx, http.MethodPost, fillTeam(relayapi.PathAdminTeamMembers, team, ""), relayapi.TeamMember{User: user}, &t)
	return t, err
}

// RemoveTeamMember takes a user out of a team.
func (c *AdminClient) RemoveTeamMember(ctx context.Context, team, user string) (relayapi.Team, error) {
	var t relayapi.Team
	err := c.call(ctx, http.MethodDelete, fillTeam(relayapi.PathAdminTeamMember, team, user), nil, &t)
	return t, err
}

func fillTeam(route, team, user string) string {
	route = strings.Replace(route, "{team}", escape(team), 1)
	return strings.Replace(route, "{user}", escape(user), 1)
}
