package relayapi

import (
	"net/url"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// Sharing: the owner of a computer lets a user of the owner's team, or the
// whole team, reach it as a viewer or an editor (DESIGN §4). The relay
// keeps the shares in its store, signs each shared person's grant with
// their role, and the Space enforces the role itself.
const (
	// PathComputerShares is one computer's shares, owner only:
	//   GET    -> Shares (?audit=1 adds the newest audit lines)
	//   PUT    ShareRequest -> Shares (a new share, or a new role)
	//   DELETE ?who=WHO -> Shares (that share; no who: every share)
	PathComputerShares = "/v1/computers/{name}/shares"
	// QueryWho and QueryAudit are the query parameters of the shares.
	QueryWho   = "who"
	QueryAudit = "audit"
	// PathAdminTeams lists (GET: TeamList) and creates (POST CreateTeam
	// -> Team) teams on the admin socket.
	PathAdminTeams = "/admin/teams"
	// PathAdminTeamMembers adds (POST TeamMember) a user to a team.
	PathAdminTeamMembers = "/admin/teams/{team}/members"
	// PathAdminTeamMember removes (DELETE) a user from a team.
	PathAdminTeamMember = "/admin/teams/{team}/members/{user}"
)

// TeamPrefix names a whole team as a share's who: "team:<id>".
const TeamPrefix = "team:"

// The refusals of sharing, kind permission_denied (the seed's texts).
const (
	ReasonSharingNeedsTeam  = "sharing_needs_team"
	MessageSharingNeedsTeam = "Sharing is for teams. Start a team to share this Space."
	ReasonShareOutsideTeam  = "share_outside_team"
)

// The audit's actions.
const (
	AuditShare   = "share"
	AuditUnshare = "unshare"
	AuditAttach  = "attach"
	AuditDetach  = "detach"
)

// ShareRequest is the body of PUT PathComputerShares. Who is a user of
// the owner's team by name or email, or TeamPrefix + the team's id; Role
// is protocol.RoleViewer (the default) or protocol.RoleEditor.
type ShareRequest struct {
	Who  string        `json:"who"`
	Role protocol.Role `json:"role,omitempty"`
}

// Share is one person (or team) a computer is shared with.
type Share struct {
	// Who is the user's name, or TeamPrefix + the team's id.
	Who  string        `json:"who"`
	Role protocol.Role `json:"role"`
	// Connected: that person (a member of that team) has a session or a
	// stream through the relay to the computer now.
	Connected bool `json:"connected"`
}

// AuditLine is one line of a computer's audit, oldest first.
type AuditLine struct {
	TSMS   int64  `json:"ts_ms"`
	Action string `json:"action"`
	Space  string `json:"space"`
	Detail string `json:"detail"`
}

// Shares answers the shares routes: the computer, whether it is online,
// its page on the relay, its shares, and (asked) its audit.
type Shares struct {
	Computer string      `json:"computer"`
	Online   bool        `json:"online"`
	URL      string      `json:"url"`
	Shares   []Share     `json:"shares"`
	Audit    []AuditLine `json:"audit,omitempty"`
}

// Team is a team of users on the relay: a user belongs to at most one.
type Team struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

// TeamList answers GET PathAdminTeams.
type TeamList struct {
	Teams []Team `json:"teams"`
}

// CreateTeam is the body of POST PathAdminTeams.
type CreateTeam struct {
	Name string `json:"name"`
}

// TeamMember is the body of POST PathAdminTeamMembers.
type TeamMember struct {
	User string `json:"user"`
}

// SharesQuery is the query of the shares routes: Who (DELETE) and Audit
// (GET).
type SharesQuery struct {
	Who   string
	Audit bool
}

// ParseSharesQuery reads a shares route's query; audit takes 1/true or
// 0/false (absent: false).
func ParseSharesQuery(v url.Values) (SharesQuery, error) {
	q := SharesQuery{Who: v.Get(QueryWho)}
	switch a := v.Get(QueryAudit); a {
	case "", "0", "false":
	case "1", "true":
		q.Audit = true
	default:
		return q, api.Errorf(api.KindInvalidArgument, "%s=%.20q: want 1 or 0", QueryAudit, a)
	}
	return q, nil
}
