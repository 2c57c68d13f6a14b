package api

import (
	"net/url"
	"strings"
)

// PathRelay is the daemon's relay attachment: GET answers RelayStatus, PUT
// (RelayAttachRequest) attaches the Space to a relay (or re-attaches it with
// a new token), DELETE detaches it and forgets the relay. Only the token's
// holder or a relay grant of role owner may change it.
const PathRelay = "/v1/relay"

// RelayAttachRequest is the body of PUT /v1/relay: which relay to dial, the
// computer token it gave this Space, and how to trust its certificate (a
// pinned fingerprint, or PEM CAs; neither: the system's roots).
type RelayAttachRequest struct {
	// URLs are wss:// URLs of the relay's nodes, tried in turn.
	URLs []string `json:"urls"`
	// Token is the computer token (cuac_...). It is kept in the state
	// directory (mode 0600), never answered back.
	Token       string `json:"token"`
	Fingerprint string `json:"fingerprint,omitempty"`
	CAPEM       string `json:"ca_pem,omitempty"`
	// WaitMS bounds how long the call waits for the first attach
	// (default 10000, at most 60000); 0 takes the default. The answer says
	// whether it is connected by then; it goes on trying either way.
	WaitMS int `json:"wait_ms,omitempty"`
}

// RelayStatus is the state of the Space's relay attachment (GET /v1/relay,
// and Capabilities.Relay).
type RelayStatus struct {
	// Attached: the Space is told to keep a session with a relay (it may
	// be reconnecting now; see Connected).
	Attached bool     `json:"attached"`
	URLs     []string `json:"urls,omitempty"`
	// URL is the node of the current (or last) session.
	URL string `json:"url,omitempty"`
	// Computer is the name the relay knows this Space by (relay:<computer>).
	Computer  string `json:"computer,omitempty"`
	Connected bool   `json:"connected"`
	// ConnectedSinceMS is when the current session started (Unix ms).
	ConnectedSinceMS int64 `json:"connected_since_ms,omitempty"`
	// LastError is why the last session ended or the last dial failed.
	LastError   string `json:"last_error,omitempty"`
	LastErrorMS int64  `json:"last_error_ms,omitempty"`
	// Fingerprint is the pinned certificate of the relay, if one is.
	Fingerprint string `json:"fingerprint,omitempty"`
	// GrantKey is the pinned Ed25519 key of the relay's grants
	// ("ed25519:" and base64), once the first session pinned it.
	GrantKey string `json:"grant_key,omitempty"`
	// Node is the relay node of the current session.
	Node string `json:"node,omitempty"`
}

// RelayDetached is the answer of DELETE /v1/relay.
type RelayDetached struct {
	// Detached is false when the Space was not attached.
	Detached bool `json:"detached"`
}

// PrefixRelayComputer is where cua-relay reaches one computer's Space:
// https://RELAY/c/<computer> is the base URL of relay:<computer>, its
// routes under it. relay/relayapi.PrefixComputer spells the same (api
// stands on the standard library alone, so it cannot import it; a test of
// the bridge holds the two together).
const PrefixRelayComputer = "/c/"

// IsRelayComputerURL reports whether baseURL is a Space reached through
// cua-relay: its path is PrefixRelayComputer and one computer's name.
func IsRelayComputerURL(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	name, ok := strings.CutPrefix(strings.TrimRight(u.Path, "/"), PrefixRelayComputer)
	return ok && name != "" && !strings.Contains(name, "/")
}
