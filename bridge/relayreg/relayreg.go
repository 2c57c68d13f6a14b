// Package relayreg publishes a Space on the bridge's relay and takes it
// off: the one implementation behind the tools relay_register_space and
// relay_unregister_space and the commands cua-bridge relay register and
// unregister. The Space's own cua-spacesd dials the relay (PUT /v1/relay);
// the bridge only creates its computer on the relay, with the logged-in
// user's token, and hands the Space that computer's token.
package relayreg

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Limits of a registration.
const (
	// AttachWaitMS is how long the Space's PUT /v1/relay waits for its
	// first session before it answers (api.RelayAttachRequest.WaitMS).
	AttachWaitMS = 10_000
	// detachTimeout bounds the best-effort detach of a computer reached
	// through the relay before its record goes: its session ends with
	// the answer, which may then be lost.
	detachTimeout = 5 * time.Second
)

// Registered is the answer of a registration (the seed's fields).
type Registered struct {
	// Space is the Space as the bridge names it.
	Space string `json:"space"`
	// RelaySpace is how the account's other devices reach it:
	// relay:<computer>.
	RelaySpace string `json:"relay_space"`
	// Machine is the computer's name on the relay.
	Machine string `json:"machine"`
	// URL is the computer's base URL on the relay (https://RELAY/c/<computer>).
	URL    string `json:"url"`
	Online bool   `json:"online"`
}

// Unregistered is the answer of an unregistration.
type Unregistered struct {
	Space string `json:"space"`
	// Unregistered is false when the Space was not on the relay.
	Unregistered bool `json:"unregistered"`
}

// Register publishes the Space id names (a registered or direct Space, not
// relay:) as the logged-in user's computer name (default: the Space's
// name) and answers once the Space attached or its wait ran out.
// Idempotent: a Space attached to this relay under that name and connected
// is answered as it is; any other state (never attached, detached,
// restarted without its state, another relay or name) gets a fresh
// computer token and is attached again.
//
// The owner's registration is the owner's own reach, not a share: a mark
// that the computer was attached because of a share goes, so that
// unsharing everyone leaves it on the relay.
func Register(ctx context.Context, reg *registry.Registry, id, name string) (*Registered, error) {
	r, _, err := register(ctx, reg, id, name)
	if err != nil {
		return nil, err
	}
	l, err := reg.Relay()
	if err != nil {
		return nil, err
	}
	if err := reg.ForgetShareAttached(l.URL, r.Machine); err != nil {
		return nil, err
	}
	return r, nil
}

// register is Register without touching the share marks; fresh says the
// relay held no computer of that name for the user before.
func register(ctx context.Context, reg *registry.Registry, id, name string) (_ *Registered, fresh bool, _ error) {
	if strings.HasPrefix(strings.TrimSpace(id), registry.PrefixRelay) {
		return nil, false, api.Errorf(api.KindInvalidArgument, "space %q is on the relay already: register a Space by its registered name or direct:<host:port>", id)
	}
	relay, login, err := reg.RelayClient()
	if err != nil {
		return nil, false, err
	}
	c, e, err := reg.Client(id)
	if err != nil {
		return nil, false, err
	}
	if name == "" {
		name = defaultName(e)
		if err := protocol.CheckComputerName(name); err != nil {
			return nil, false, api.Errorf(api.KindInvalidArgument, "space %s: its name is no computer name (%s)", e.ID(), api.AsError(err).Message).
				WithHint("give the computer a name (name, or --name NAME)")
		}
	}
	if err := protocol.CheckComputerName(name); err != nil {
		return nil, false, err
	}
	if err := requireRelayAttach(ctx, c); err != nil {
		return nil, false, err
	}
	st, err := status(ctx, c)
	if err != nil {
		return nil, false, err
	}
	answer := func(online bool) *Registered {
		return &Registered{Space: e.ID(), RelaySpace: registry.PrefixRelay + name, Machine: name, URL: relay.ComputerURL(name), Online: online}
	}
	// The computer, if the user holds it already: not_found is none (or
	// another user's, which the relay does not tell apart).
	_, err = relay.Computer(ctx, name)
	exists := err == nil
	if err != nil && api.KindOf(err) != api.KindNotFound {
		return nil, false, err
	}
	if exists && st.Attached && st.Connected && st.Computer == name && sameRelay(relayKey(ctx, relay), login.URL, st) {
		return answer(true), false, nil
	}
	// A new token (for a computer the user holds, the old one stops
	// working): the Space attaches with it.
	ct, err := relay.CreateComputer(ctx, name)
	if err != nil {
		return nil, false, err
	}
	req, err := attachRequest(relay, ct)
	if err != nil {
		return nil, false, err
	}
	attached, err := c.AttachRelay(ctx, req)
	if err != nil {
		if !exists {
			// Leave no computer behind that no Space holds the token of.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), detachTimeout)
			_, _ = relay.DeleteComputer(dctx, name)
			cancel()
		}
		return nil, false, relayAttachError(err)
	}
	return answer(attached.Connected), !exists, nil
}

// Unregister takes the Space id names off the relay. A registered or
// direct Space detaches (DELETE /v1/relay) and its computer is deleted; a
// relay:<computer> is deleted from the relay directory (its owner only),
// after the Space, if it is connected, was told to detach.
func Unregister(ctx context.Context, reg *registry.Registry, id string) (*Unregistered, error) {
	relay, login, err := reg.RelayClient()
	if err != nil {
		return nil, err
	}
	if computer, ok := strings.CutPrefix(strings.TrimSpace(id), registry.PrefixRelay); ok {
		out, err := unregisterComputer(ctx, reg, relay, computer)
		if err != nil {
			return nil, err
		}
		return out, reg.ForgetShareAttached(login.URL, computer)
	}
	c, e, err := reg.Client(id)
	if err != nil {
		return nil, err
	}
	if err := requireRelayAttach(ctx, c); err != nil {
		return nil, err
	}
	st, err := status(ctx, c)
	if err != nil {
		return nil, err
	}
	out := &Unregistered{Space: e.ID()}
	if !st.Attached {
		return out, nil
	}
	ours := sameRelay(relayKey(ctx, relay), login.URL, st)
	d, err := c.DetachRelay(ctx)
	if err != nil {
		return nil, relayAttachError(err)
	}
	out.Unregistered = d.Detached
	name := st.Computer
	if name == "" {
		name = defaultName(e) // attached, but its first session never said
	}
	if !ours || protocol.CheckComputerName(name) != nil {
		return out, nil // another relay's computer: not this login's to delete
	}
	deleted, err := relay.DeleteComputer(ctx, name)
	if err != nil && api.KindOf(err) != api.KindNotFound {
		return nil, err
	}
	out.Unregistered = out.Unregistered || deleted
	return out, reg.ForgetShareAttached(login.URL, name)
}

func unregisterComputer(ctx context.Context, reg *registry.Registry, relay *relayapi.Client, computer string) (*Unregistered, error) {
	if err := protocol.CheckComputerName(computer); err != nil {
		return nil, err
	}
	out := &Unregistered{Space: registry.PrefixRelay + computer}
	comp, err := relay.Computer(ctx, computer)
	if api.KindOf(err) == api.KindNotFound {
		return out, nil // none, or another user's: the relay does not tell them apart
	}
	if err != nil {
		return nil, err
	}
	if comp.Online {
		// Best effort: a Space that leaves by itself does not redial with
		// a token that is about to be refused.
		if c, _, err := reg.Client(registry.PrefixRelay + computer); err == nil {
			dctx, cancel := context.WithTimeout(ctx, detachTimeout)
			_, _ = c.DetachRelay(dctx)
			cancel()
		}
	}
	deleted, err := relay.DeleteComputer(ctx, computer)
	if api.KindOf(err) == api.KindNotFound {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Unregistered = deleted
	return out, nil
}

// requireRelayAttach answers capability_missing for a Space whose
// cua-spacesd cannot attach to a relay.
func requireRelayAttach(ctx context.Context, c *client.Client) error {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return err
	}
	return caps.Require(api.FeatureRelayAttach)
}

// status asks the Space's relay state; a daemon without the route is one
// that predates relay_attach.
func status(ctx context.Context, c *client.Client) (*api.RelayStatus, error) {
	st, err := c.Relay(ctx)
	if err != nil {
		return nil, relayAttachError(err)
	}
	return st, nil
}

// relayAttachError says capability_missing for a daemon that answers no
// route for /v1/relay (it reported relay_attach without serving it).
func relayAttachError(err error) error {
	if e := api.AsError(err); e.Kind == api.KindNotFound && e.Status == 404 && strings.Contains(e.Message, "no route") {
		return api.CapabilityMissing(api.FeatureRelayAttach, "this cua-spacesd serves no "+api.PathRelay+": update it")
	}
	return err
}

// attachRequest is what the Space needs to dial the relay: its attach
// URLs, the computer's token, and the relay's certificate trusted as this
// bridge trusts it.
func attachRequest(relay *relayapi.Client, ct *relayapi.ComputerToken) (api.RelayAttachRequest, error) {
	urls := ct.URLs
	if len(urls) == 0 {
		urls = relay.AttachURLs()
	}
	trust := relay.Trust()
	ca, err := trust.CAPEM()
	if err != nil {
		return api.RelayAttachRequest{}, err
	}
	return api.RelayAttachRequest{URLs: urls, Token: ct.Token, Fingerprint: trust.Fingerprint, CAPEM: ca, WaitMS: AttachWaitMS}, nil
}

// sameRelay reports whether the Space's attachment names the relay at
// base: one of its URLs has base's host.
//
// The relay's grant key decides when both are known (a Space may dial the
// relay by another name than the bridge, through a proxy or a load
// balancer); the host of its URLs only when not.
func sameRelay(key, base string, st *api.RelayStatus) bool {
	if key != "" && st.GrantKey != "" {
		return key == st.GrantKey
	}
	b, err := url.Parse(base)
	if err != nil {
		return false
	}
	for _, s := range append([]string{st.URL}, st.URLs...) {
		if u, err := url.Parse(s); err == nil && s != "" && strings.EqualFold(u.Host, b.Host) {
			return true
		}
	}
	return false
}

// relayKey is the relay's grant key as its /health says it, or "" when it
// cannot be read (then sameRelay compares hosts).
func relayKey(ctx context.Context, relay *relayapi.Client) string {
	h, err := relay.Health(ctx)
	if err != nil {
		return ""
	}
	return h.GrantKey
}

// defaultName is a Space's computer name by default: its registered name,
// or for direct:<host:port> the address as a name (127.0.0.1-3211).
func defaultName(e registry.Entry) string {
	if hostport, ok := strings.CutPrefix(e.Name, registry.PrefixDirect); ok {
		return strings.NewReplacer(":", "-", "[", "", "]", "").Replace(hostport)
	}
	return e.Name
}
