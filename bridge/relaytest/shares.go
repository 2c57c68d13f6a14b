package relaytest

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// The shares routes of the stand-in (PathComputerShares), kept in memory.
// They stand in for cua-relay's in the bridge's unit tests only: the real
// relay's sharing (its store, teams, grants, cutting sessions) is tested
// with the real relay in test/relay. The stand-in answers the seed's
// refusals: an owner in no team (SetTeam) gets sharing_needs_team, a who
// outside the owner's team share_outside_team.

// SetTeam puts users in team id (a user is in at most one team).
func (r *Relay) SetTeam(id string, users ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range users {
		r.teams[u] = id
	}
}

// Connect marks who as connected to a shared computer (or not).
func (r *Relay) Connect(computer, who string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.computers[computer]; c != nil {
		for i := range c.shares {
			if c.shares[i].Who == who {
				c.shares[i].Connected = on
			}
		}
	}
}

// SharesOf answers a computer's shares as the stand-in keeps them.
func (r *Relay) SharesOf(computer string) []relayapi.Share {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.computers[computer]
	if c == nil {
		return nil
	}
	return append([]relayapi.Share(nil), c.shares...)
}

// sharedRole is user's role on c through a share ("" for none).
func (r *Relay) sharedRole(c *computer, user string) protocol.Role {
	var role protocol.Role
	for _, s := range c.shares {
		if s.Who == user || (strings.HasPrefix(s.Who, relayapi.TeamPrefix) && r.teams[user] != "" && s.Who == relayapi.TeamPrefix+r.teams[user]) {
			if role == "" || s.Role == protocol.RoleEditor {
				role = s.Role
			}
		}
	}
	return role
}

func (r *Relay) sharesRoute(w http.ResponseWriter, req *http.Request, user relayapi.User, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.mine(user, name)
	if c == nil {
		writeError(w, http.StatusNotFound, api.Errorf(api.KindNotFound, "relay: no computer %s", name))
		return
	}
	now := time.Now().UnixMilli()
	switch req.Method {
	case http.MethodGet:
	case http.MethodPut:
		var in relayapi.ShareRequest
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil || in.Who == "" {
			writeError(w, http.StatusBadRequest, api.Errorf(api.KindInvalidArgument, "relay: who is required"))
			return
		}
		if in.Role == "" {
			in.Role = protocol.RoleViewer
		}
		if in.Role != protocol.RoleViewer && in.Role != protocol.RoleEditor {
			writeError(w, http.StatusBadRequest, api.Errorf(api.KindInvalidArgument, "relay: role %q", in.Role))
			return
		}
		team := r.teams[user.Name]
		if team == "" {
			writeError(w, http.StatusForbidden, api.Errorf(api.KindPermissionDenied, "%s", relayapi.MessageSharingNeedsTeam).WithReason(relayapi.ReasonSharingNeedsTeam))
			return
		}
		if in.Who != relayapi.TeamPrefix+team && (r.teams[in.Who] != team || in.Who == user.Name) {
			writeError(w, http.StatusForbidden, api.Errorf(api.KindPermissionDenied, "relay: %s is not in your team", in.Who).WithReason(relayapi.ReasonShareOutsideTeam))
			return
		}
		found := false
		for i := range c.shares {
			if c.shares[i].Who == in.Who {
				c.shares[i].Role, found = in.Role, true
			}
		}
		if !found {
			c.shares = append(c.shares, relayapi.Share{Who: in.Who, Role: in.Role})
			sort.Slice(c.shares, func(i, j int) bool { return c.shares[i].Who < c.shares[j].Who })
		}
		c.audit = append(c.audit, relayapi.AuditLine{TSMS: now, Action: relayapi.AuditShare, Space: name, Detail: in.Who + " as " + string(in.Role)})
	case http.MethodDelete:
		who := req.URL.Query().Get(relayapi.QueryWho)
		kept := c.shares[:0]
		for _, s := range c.shares {
			if who != "" && s.Who != who {
				kept = append(kept, s)
				continue
			}
			c.audit = append(c.audit, relayapi.AuditLine{TSMS: now, Action: relayapi.AuditUnshare, Space: name, Detail: s.Who})
		}
		c.shares = kept
	default:
		writeError(w, http.StatusMethodNotAllowed, api.Errorf(api.KindInvalidArgument, "relay: method %s", req.Method))
		return
	}
	out := relayapi.Shares{Computer: name, Online: c.Online, URL: relayapi.ComputerURL(r.URL, name), Shares: append([]relayapi.Share{}, c.shares...)}
	if req.URL.Query().Get(relayapi.QueryAudit) == "1" {
		out.Audit = append([]relayapi.AuditLine{}, c.audit...)
	}
	writeJSON(w, http.StatusOK, out)
}
