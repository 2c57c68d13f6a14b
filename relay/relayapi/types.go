// Package relayapi is cua-relay's own HTTP API: its routes and the JSON
// they carry, for the relay that serves them, the bridge that calls them
// with a user's API token, and the admin CLI that calls the admin socket.
// The daemon's routes reached through the relay are not here: they are
// the daemon's (package api), under PrefixComputer.
package relayapi

import "github.com/trycua/cua-spacesd/relay/protocol"

// Routes of the relay's HTTPS listener.
const (
	// PathHealth names the relay without auth: {"relay": "cua-relay", ...}.
	PathHealth = "/health"
	// PathAttach is the Space's control session: a WebSocket upgrade with
	// the computer token as its bearer (protocol docs).
	PathAttach = "/v1/attach"
	// PathData is a Space's data connection for one bulk transfer: a
	// WebSocket upgrade with the one-time data token of an OpenData.
	PathData = "/v1/data"
	// PathMe answers Me for the user token's holder.
	PathMe = "/v1/me"
	// PathComputers lists (GET) the user's computers, and creates one or
	// gives it a new token (POST CreateComputer -> ComputerToken).
	PathComputers = "/v1/computers"
	// PathComputer (GET, DELETE) is one computer: Computer, or Deleted.
	PathComputer = "/v1/computers/{name}"
	// PrefixComputer + name + a daemon path reaches that computer's
	// cua-spacesd: /c/<computer>/v1/exec. The user token authenticates
	// the caller to the relay and never reaches the Space; the relay
	// signs a grant for the stream instead. Without a user token, a
	// viewer link reaches its page's files and, with a media ticket as
	// its bearer (passed on for the Space to check), its stream routes
	// (docs/relay.md, "Viewer links").
	PrefixComputer = "/c/"
)

// ReasonRateLimited is the reason of a 429 limit_exceeded answered to a
// link holder's request (no relay token) past its computer's link rate.
const ReasonRateLimited = "rate_limited"

// Routes of the admin socket (DataDir/AdminSocket, HTTP over a Unix
// socket, mode 0600: whoever may open it is the relay's admin).
const (
	AdminSocket     = "admin.sock"
	PathAdminUsers  = "/admin/users"               // GET: UserList; POST CreateUser -> User
	PathAdminUser   = "/admin/users/{name}"        // DELETE -> Deleted
	PathAdminTokens = "/admin/users/{name}/tokens" // POST -> UserToken
	// PathAdminComputers lists every computer of every user.
	PathAdminComputers = "/admin/computers"
	// PathAdminMetrics is the node's metrics in the Prometheus text
	// format (GET; text/plain; version=0.0.4).
	PathAdminMetrics = "/metrics"
)

// Health is GET /health's answer.
type Health struct {
	Relay   string `json:"relay"` // always RelayName
	Version string `json:"version"`
	Node    string `json:"node"`
	Status  string `json:"status"`
	// GrantKey is the key the relay signs grants with
	// (protocol.FormatGrantKey): a Space whose status pins the same key
	// is attached to this relay, whatever URL it dials it by.
	GrantKey string `json:"grant_key"`
}

// RelayName tells a cua-relay from any other HTTP server.
const RelayName = "cua-relay"

// User is a person the relay knows.
type User struct {
	// ID is stable and opaque (the grant's person); Name is unique.
	ID        string `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email,omitempty"`
	CreatedMS int64  `json:"created_ms"`
}

// UserList answers GET /admin/users.
type UserList struct {
	Users []User `json:"users"`
}

// CreateUser is the body of POST /admin/users.
type CreateUser struct {
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
}

// UserToken answers POST /admin/users/{name}/tokens: the token is shown
// this once; the relay keeps only its hash.
type UserToken struct {
	User  string `json:"user"`
	Token string `json:"token"`
}

// Me answers GET /v1/me.
type Me struct {
	User User `json:"user"`
}

// Computer is one registered computer (a Space the relay reaches).
type Computer struct {
	Name string `json:"name"`
	// Owner is the owning user's name.
	Owner     string `json:"owner"`
	CreatedMS int64  `json:"created_ms"`
	// Online: its control session is up now (on Node, since SinceMS).
	Online        bool   `json:"online"`
	SinceMS       int64  `json:"since_ms,omitempty"`
	Node          string `json:"node,omitempty"`
	DaemonVersion string `json:"daemon_version,omitempty"`
	// Role is the caller's on it in GET /v1/computers: owner, or the
	// role of a share (viewer, editor) for a computer shared with them.
	Role protocol.Role `json:"role,omitempty"`
}

// ComputerList answers GET /v1/computers and GET /admin/computers.
type ComputerList struct {
	Computers []Computer `json:"computers"`
}

// CreateComputer is the body of POST /v1/computers. A name the user holds
// already gets a new token (the old one stops working, and its session
// ends with token_rotated); a name another user holds is refused.
type CreateComputer struct {
	Name string `json:"name"`
}

// ComputerToken answers POST /v1/computers: the computer token is shown
// this once. URLs are the relay's wss:// attach URLs, for the Space.
type ComputerToken struct {
	Computer Computer `json:"computer"`
	Token    string   `json:"token"`
	URLs     []string `json:"urls"`
}

// Deleted answers a DELETE.
type Deleted struct {
	Deleted bool `json:"deleted"`
}
