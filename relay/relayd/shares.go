package relayd

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/mesh"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/store"
)

// Sharing: the owner's routes (/v1/computers/{name}/shares), who a share
// names, and the cut of an unshare (DESIGN §4).

// auditScan is how many of the audit's newest lines a computer's audit is
// read from; auditLines how many of its own it answers.
const (
	auditScan  = 2000
	auditLines = 100
)

// whoKind says how a share's who names someone.
type whoKind int

const (
	whoName whoKind = iota
	whoEmail
	whoTeam
)

// parseWho classifies a share's who: TeamPrefix + a team id, an email
// (it has an '@'), or a user's name. It only parses; the store says who
// that is.
func parseWho(who string) (whoKind, string, error) {
	who = strings.TrimSpace(who)
	if who == "" {
		return 0, "", api.Errorf(api.KindInvalidArgument, "who: empty; give a user's name or email, or %s<team>", relayapi.TeamPrefix)
	}
	if id, ok := strings.CutPrefix(who, relayapi.TeamPrefix); ok {
		if err := store.CheckUserName(id); err != nil {
			return 0, "", api.Errorf(api.KindInvalidArgument, "who %.100q: not a team id", who)
		}
		return whoTeam, id, nil
	}
	if strings.Contains(who, "@") {
		if len(who) > store.MaxEmailLen || strings.ContainsFunc(who, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return 0, "", api.Errorf(api.KindInvalidArgument, "who %.100q: not an email", who)
		}
		return whoEmail, who, nil
	}
	if err := store.CheckUserName(who); err != nil {
		return 0, "", api.Errorf(api.KindInvalidArgument, "who %.100q: not a user's name, email or %s<team>", who, relayapi.TeamPrefix)
	}
	return whoName, who, nil
}

// parseRole is a share's role: viewer when not given.
func parseRole(r protocol.Role) (protocol.Role, error) {
	switch r {
	case "":
		return protocol.RoleViewer, nil
	case protocol.RoleViewer, protocol.RoleEditor:
		return r, nil
	}
	return "", api.Errorf(api.KindInvalidArgument, "role %.40q: want %s or %s", string(r), protocol.RoleViewer, protocol.RoleEditor)
}

// parseShareRequest checks a PUT's request: its who parsed, its role
// defaulted.
func parseShareRequest(req relayapi.ShareRequest) (whoKind, string, protocol.Role, error) {
	kind, v, err := parseWho(req.Who)
	if err != nil {
		return 0, "", "", err
	}
	role, err := parseRole(req.Role)
	return kind, v, role, err
}

// resolveWho is the store's key of who: TeamPrefix + a team id, or a user
// id. With ownerTeam (a share being made), who must be that team or one
// of its members.
func (s *Server) resolveWho(ctx context.Context, kind whoKind, v string, owner store.User, ownerTeam string, checkTeam bool) (string, error) {
	st := s.cfg.Store
	if kind == whoTeam {
		if _, err := st.TeamMembers(ctx, v); err != nil {
			return "", err
		}
		if checkTeam && v != ownerTeam {
			return "", outsideTeam("team %q is not yours", v)
		}
		return relayapi.TeamPrefix + v, nil
	}
	var u store.User
	var err error
	if kind == whoEmail {
		u, err = st.UserByEmail(ctx, v)
	} else {
		u, err = st.UserByName(ctx, v)
	}
	if err != nil {
		return "", err
	}
	if u.ID == owner.ID {
		return "", api.Errorf(api.KindInvalidArgument, "who %q is the owner, who has every right already", v)
	}
	if checkTeam {
		t, err := st.TeamOf(ctx, u.ID)
		if err != nil {
			return "", err
		}
		if t != ownerTeam {
			return "", outsideTeam("%q is not in your team %q", v, ownerTeam)
		}
	}
	return u.ID, nil
}

func outsideTeam(format string, args ...any) error {
	return api.Errorf(api.KindPermissionDenied, "share outside your team: "+format, args...).WithReason(relayapi.ReasonShareOutsideTeam).
		WithHint("share with a user of your team (by name or email), or with " + relayapi.TeamPrefix + "<your team>")
}

func (s *Server) handleGetShares(w http.ResponseWriter, r *http.Request, u store.User) {
	c, ok := s.ownComputer(w, r, u)
	if !ok {
		return
	}
	q, err := relayapi.ParseSharesQuery(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	s.writeShares(w, r, c, q.Audit)
}

// handlePutShare shares the computer, or changes a share's role. A role
// lowered (editor to viewer) cuts that person's streams as an unshare
// does; a role raised takes effect from their next stream.
func (s *Server) handlePutShare(w http.ResponseWriter, r *http.Request, u store.User) {
	c, ok := s.ownComputer(w, r, u)
	if !ok {
		return
	}
	var req relayapi.ShareRequest
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	kind, v, role, err := parseShareRequest(req)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := r.Context()
	team, err := s.cfg.Store.TeamOf(ctx, u.ID)
	if err != nil {
		writeError(w, err)
		return
	}
	if team == "" {
		writeError(w, api.Errorf(api.KindPermissionDenied, "%s", relayapi.MessageSharingNeedsTeam).WithReason(relayapi.ReasonSharingNeedsTeam).
			WithHint("a relay admin adds teams: cua-relay team add TEAM; cua-relay team member add TEAM USER"))
		return
	}
	who, err := s.resolveWho(ctx, kind, v, u, team, true)
	if err != nil {
		writeError(w, err)
		return
	}
	people, err := s.peopleOf(ctx, who)
	if err != nil {
		writeError(w, err)
		return
	}
	before := s.rolesOf(ctx, c.Name, people)
	prev, err := s.cfg.Store.PutShare(ctx, c.Name, who, role)
	if err != nil {
		writeError(w, err)
		return
	}
	detail := strings.TrimSpace(req.Who) + " as " + string(role) + " by " + u.Name
	if prev != "" && prev != role {
		detail += " (was " + string(prev) + ")"
	}
	s.audit(store.AuditShare, c.Name, detail)
	s.afterChange(ctx, c.Name, before, "the share's role changed")
	s.writeShares(w, r, c, false)
}

// handleDeleteShares ends the share of ?who=, or every share.
func (s *Server) handleDeleteShares(w http.ResponseWriter, r *http.Request, u store.User) {
	c, ok := s.ownComputer(w, r, u)
	if !ok {
		return
	}
	ctx := r.Context()
	q, err := relayapi.ParseSharesQuery(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	raw, who := q.Who, ""
	if raw != "" {
		kind, v, err := parseWho(raw)
		if err != nil {
			writeError(w, err)
			return
		}
		// No team check: an owner must be able to end the share of
		// someone who has left the team since.
		if who, err = s.resolveWho(ctx, kind, v, u, "", false); err != nil {
			writeError(w, err)
			return
		}
	}
	var people []string
	if who == "" {
		entries, err := s.cfg.Store.Shares(ctx, c.Name)
		if err != nil {
			writeError(w, err)
			return
		}
		for _, e := range entries {
			p, _ := s.peopleOf(ctx, e.Who)
			people = append(people, p...)
		}
	} else {
		p, err := s.peopleOf(ctx, who)
		if err != nil {
			writeError(w, err)
			return
		}
		people = p
	}
	before := s.rolesOf(ctx, c.Name, people)
	gone, err := s.cfg.Store.DeleteShares(ctx, c.Name, who)
	if err != nil {
		writeError(w, err)
		return
	}
	if who == "" {
		// Every share ended: one Kick for all, and every shared person's
		// streams cut here, before the audit's write.
		if ss := s.session(c.Name); ss != nil {
			ss.kick(protocol.KickAll, "every share of this computer ended")
		} else {
			s.notify(mesh.Notice{Op: mesh.OpKick, Computer: c.Name, Person: protocol.KickAll, Why: "every share of this computer ended"})
		}
	} else {
		s.afterChange(ctx, c.Name, before, "the share ended")
	}
	for _, e := range gone {
		s.audit(store.AuditUnshare, c.Name, s.whoName(ctx, e.Who)+" by "+u.Name)
	}
	s.writeShares(w, r, c, false)
}

// peopleOf is the user ids a share's who reaches: the user, or the team's
// members.
func (s *Server) peopleOf(ctx context.Context, who string) ([]string, error) {
	if id, ok := strings.CutPrefix(who, relayapi.TeamPrefix); ok {
		return s.cfg.Store.TeamMembers(ctx, id)
	}
	return []string{who}, nil
}

// rolesOf is the role each person has on computer now.
func (s *Server) rolesOf(ctx context.Context, computer string, people []string) map[string]protocol.Role {
	out := make(map[string]protocol.Role, len(people))
	for _, p := range people {
		out[p], _ = s.cfg.Store.RoleOf(ctx, computer, p)
	}
	return out
}

// afterChange cuts, on computer, the people whose role is gone or lower
// than before: a Kick to the Space and their streams through the relay
// closed. A raised role needs no cut: their pooled streams carry the old
// grant, so they are closed and the next stream carries the new one. A
// computer attached to another node gets the same as a notice: its home
// node kicks and cuts (its streams through every node included).
func (s *Server) afterChange(ctx context.Context, computer string, before map[string]protocol.Role, why string) {
	ss := s.session(computer)
	for p, old := range before {
		now, err := s.cfg.Store.RoleOf(ctx, computer, p)
		if err != nil || now == old {
			continue
		}
		n := mesh.Notice{Op: mesh.OpKick, Computer: computer, Person: p, Why: why}
		if now != "" && old != protocol.RoleEditor {
			n.Op, n.Why = mesh.OpCut, "their role changed"
		}
		switch {
		case ss == nil:
			s.notify(n)
		case n.Op == mesh.OpKick:
			ss.kick(p, why)
		default:
			ss.cut(p, n.Why)
		}
	}
}

// recheckPerson cuts person on every attached computer they reach by a
// share no more (they left a team), on every node.
func (s *Server) recheckPerson(ctx context.Context, person, why string) {
	s.recheckPersonHere(ctx, person, why)
	s.notify(mesh.Notice{Op: mesh.OpRecheckPerson, Person: person, Why: why})
}

// recheckPersonHere is recheckPerson on the computers attached here.
func (s *Server) recheckPersonHere(ctx context.Context, person, why string) {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		if ss.comp.Owner == person || !ss.hasStreams(person) {
			continue
		}
		if role, err := s.cfg.Store.RoleOf(ctx, ss.comp.Name, person); err == nil && role == "" {
			ss.kick(person, why)
		}
	}
}

// whoName is a share's who as the API shows it: the user's name, or
// TeamPrefix + the team's id.
func (s *Server) whoName(ctx context.Context, who string) string {
	if strings.HasPrefix(who, relayapi.TeamPrefix) {
		return who
	}
	if u, err := s.cfg.Store.User(ctx, who); err == nil {
		return u.Name
	}
	return who
}

// writeShares answers the computer's shares.
func (s *Server) writeShares(w http.ResponseWriter, r *http.Request, c store.Computer, audit bool) {
	ctx := r.Context()
	entries, err := s.cfg.Store.Shares(ctx, c.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	scheme := "https"
	if r.TLS == nil {
		scheme = "http"
	}
	out := relayapi.Shares{Computer: c.Name, URL: scheme + "://" + r.Host + relayapi.PrefixComputer + c.Name + "/", Shares: []relayapi.Share{}}
	presence, online := s.presenceOf(ctx, c.Name)
	out.Online = online
	for _, e := range entries {
		sh := relayapi.Share{Who: s.whoName(ctx, e.Who), Role: e.Role}
		if online {
			people, _ := s.peopleOf(ctx, e.Who)
			for _, p := range people {
				sh.Connected = sh.Connected || slices.Contains(presence.Connected, p)
			}
		}
		out.Shares = append(out.Shares, sh)
	}
	if audit {
		lines, err := s.cfg.Store.ComputerAudit(ctx, c.Name, auditLines, auditScan)
		if err != nil {
			writeError(w, err)
			return
		}
		for _, l := range lines {
			out.Audit = append(out.Audit, relayapi.AuditLine{TSMS: l.TS, Action: l.Action, Space: l.Space, Detail: l.Detail})
		}
	}
	writeJSON(w, http.StatusOK, out)
}
