package relayreg

import (
	"context"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Shared is the answer of share_space, unshare_space and space_shares (the
// seed's fields).
type Shared struct {
	// Space is the Space as the bridge names it.
	Space string `json:"space"`
	// Machine is the relay computer the Space is shared as; "" when it is
	// not on the relay.
	Machine string `json:"machine"`
	// InviteeSpace is what the people it is shared with open:
	// relay:<computer> ("" when it is not on the relay).
	InviteeSpace string `json:"invitee_space"`
	// URL is the computer's page on the relay.
	URL    string           `json:"url"`
	Online bool             `json:"online"`
	Shares []relayapi.Share `json:"shares"`
	// Audit is the newest owner-side lines, asked with audit.
	Audit []relayapi.AuditLine `json:"audit,omitempty"`
}

// ParseRole checks a share's role: viewer (the default, for "") or editor.
func ParseRole(role string) (protocol.Role, error) {
	switch r := protocol.Role(strings.TrimSpace(role)); r {
	case "":
		return protocol.RoleViewer, nil
	case protocol.RoleViewer, protocol.RoleEditor:
		return r, nil
	}
	return "", api.Errorf(api.KindInvalidArgument, "role %q: want viewer or editor", role)
}

// Share shares the Space id names with who (a user of the owner's team by
// name or email, or team:<id>) in role. A relay:<computer> is shared
// directly; any other Space that is not on this relay yet is registered
// and attached first (under its default name), and remembered as attached
// because of the share, so that Unshare of everyone takes it off again.
// The relay's refusals (permission_denied sharing_needs_team or
// share_outside_team) pass through as they are.
func Share(ctx context.Context, reg *registry.Registry, id, who string, role protocol.Role) (*Shared, error) {
	who = strings.TrimSpace(who)
	if who == "" {
		return nil, api.Errorf(api.KindInvalidArgument, "who: a user of your team (name or email) or team:<id>")
	}
	if role == "" {
		role = protocol.RoleViewer
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	relay, login, err := reg.RelayClient()
	if err != nil {
		return nil, err
	}
	out, computer, err := onRelay(ctx, reg, relay, login, id)
	if err != nil {
		return nil, err
	}
	fresh := false
	if computer == "" {
		r, isNew, err := register(ctx, reg, id, "")
		if err != nil {
			return nil, err
		}
		computer, fresh = r.Machine, isNew
		if fresh {
			if err := reg.MarkShareAttached(registry.SharedAttach{Relay: login.URL, Computer: computer, Space: out.Space}); err != nil {
				return nil, err
			}
		}
	}
	s, err := relay.Share(ctx, computer, relayapi.ShareRequest{Who: who, Role: role})
	if err != nil {
		if fresh {
			// Attached for this share alone, which the relay refused: it
			// leaves again (best effort; the refusal is the answer).
			_, _ = Unregister(context.WithoutCancel(ctx), reg, id)
		}
		return nil, err
	}
	return view(out.Space, computer, relay, s), nil
}

// Unshare ends the share of the Space id names with who, or with
// everyone for who "". A Space attached only because it was shared then
// leaves the relay; one the owner registered stays.
func Unshare(ctx context.Context, reg *registry.Registry, id, who string) (*Shared, error) {
	who = strings.TrimSpace(who)
	relay, login, err := reg.RelayClient()
	if err != nil {
		return nil, err
	}
	out, computer, err := onRelay(ctx, reg, relay, login, id)
	if err != nil || computer == "" {
		return out, err // not on the relay: shared with no one
	}
	s, err := relay.Unshare(ctx, computer, who)
	if err != nil {
		return nil, err
	}
	if who == "" {
		_, marked, err := reg.ShareAttached(login.URL, computer)
		if err != nil {
			return nil, err
		}
		if marked {
			if _, err := Unregister(ctx, reg, id); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	return view(out.Space, computer, relay, s), nil
}

// Shares answers who the Space id names is shared with; audit adds the
// newest audit lines.
func Shares(ctx context.Context, reg *registry.Registry, id string, audit bool) (*Shared, error) {
	relay, login, err := reg.RelayClient()
	if err != nil {
		return nil, err
	}
	out, computer, err := onRelay(ctx, reg, relay, login, id)
	if err != nil || computer == "" {
		return out, err
	}
	s, err := relay.Shares(ctx, computer, audit)
	if err != nil {
		return nil, err
	}
	return view(out.Space, computer, relay, s), nil
}

// onRelay finds the computer the Space id names is on this relay as: a
// relay:<computer> is that computer; another Space the one its attachment
// to this relay names, or "" when it is not attached to this relay. out is
// the answer of a Space not on the relay.
func onRelay(ctx context.Context, reg *registry.Registry, relay *relayapi.Client, login registry.RelayLogin, id string) (out *Shared, computer string, _ error) {
	if c, ok := strings.CutPrefix(strings.TrimSpace(id), registry.PrefixRelay); ok {
		if err := protocol.CheckComputerName(c); err != nil {
			return nil, "", err
		}
		return notShared(registry.PrefixRelay + c), c, nil
	}
	c, e, err := reg.Client(id)
	if err != nil {
		return nil, "", err
	}
	out = notShared(e.ID())
	if err := requireRelayAttach(ctx, c); err != nil {
		return nil, "", err
	}
	st, err := status(ctx, c)
	if err != nil {
		return nil, "", err
	}
	if !st.Attached || st.Computer == "" || !sameRelay(relayKey(ctx, relay), login.URL, st) {
		return out, "", nil
	}
	return out, st.Computer, nil
}

func notShared(space string) *Shared { return &Shared{Space: space, Shares: []relayapi.Share{}} }

func view(space, computer string, relay *relayapi.Client, s *relayapi.Shares) *Shared {
	out := &Shared{Space: space, Machine: computer, InviteeSpace: registry.PrefixRelay + computer,
		URL: s.URL, Online: s.Online, Shares: s.Shares, Audit: s.Audit}
	if out.URL == "" {
		out.URL = relay.ComputerURL(computer)
	}
	if out.Shares == nil {
		out.Shares = []relayapi.Share{}
	}
	return out
}
