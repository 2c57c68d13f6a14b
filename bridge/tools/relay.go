package tools

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/relayreg"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// The relay tools resolve their Space themselves (NoSpace): a relay:<computer>
// that is offline must still be unregistered, and the feature they need is
// checked by relayreg, which the CLI shares.

func relayRegisterSpaceTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:    "relay_register_space",
		NoSpace: true,
		Title:   "Publish a Space on the relay for the account's other devices",
		Hints:   mcpserve.Hints{Idempotent: true, OpenWorld: true},
		Output:  spacetools.OutputOf[relayreg.Registered](),
		Description: "Publishes the Space as a computer of the signed-in account on the cua.ai relay, the way cua host setup publishes this computer: " +
			"the Space's own driver joins the relay over outbound WSS with a computer token the account registered, so no inbound port is opened. " +
			"The account's other devices (a phone off this network, the Cua app on another computer) then open relay_space; nobody else can until share_space adds them. " +
			"Idempotent, and it re-attaches a Space that restarted. Needs a driver with relay_attach (a host is already registered). " +
			"The bridge must be logged in to the relay (cua-bridge relay login).",
		Schema: spacetools.Object([]string{"space"}, map[string]*jsonschema.Schema{
			"space": spacetools.NonEmpty("The Space to publish: a registered name (a unique prefix works) or direct:<host:port>; not a relay:<computer>."),
			"name":  spacetools.Str("The computer's name on the relay (letters, digits, '.', '_', '-'; unique among the account's computers); default the Space's name."),
		}),
		Errors: []api.Kind{api.KindNotFound, api.KindAmbiguousSandbox, api.KindCapabilityMissing, api.KindHostCapabilityMissing,
			api.KindRelay, api.KindUnauthenticated, api.KindSpacesdNotAvailable, api.KindEnv, api.KindTimeout, api.KindCancelled},
		Result: "{space, relay_space (relay:<computer>: how the account's other devices reach it), machine, url, online}",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct{ Space, Name string }
			if err := spacetools.Decode(c, "relay_register_space", &a); err != nil {
				return nil, err
			}
			c.LogAttrs = append(c.LogAttrs, slog.String("space", a.Space))
			r, err := relayreg.Register(ctx, d.Registry, a.Space, a.Name)
			if err != nil {
				return nil, err
			}
			d.forget()
			state := "online"
			if !r.Online {
				state = "not connected yet (it keeps trying; list_spaces shows when it is)"
			}
			return &mcpserve.Result{Text: fmt.Sprintf("space %s is on the relay as %s (%s), %s", r.Space, r.RelaySpace, r.URL, state), Structured: r}, nil
		},
	}
}

func relayUnregisterSpaceTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:    "relay_unregister_space",
		NoSpace: true,
		Title:   "Take a Space off the relay",
		Hints:   mcpserve.Hints{Destructive: true, Idempotent: true, OpenWorld: true},
		Output:  spacetools.OutputOf[relayreg.Unregistered](),
		Description: "Takes the Space off the relay: its driver leaves and its computer is removed, with every share. " +
			"A relay:<computer> id removes that computer's record from the relay directory, which only its owner may do: " +
			"a Space that registered itself (also after it was deleted), or a computer that is no longer connected. " +
			"A host that is connected now is taken off with cua host remove on that computer instead.",
		Schema: spacetools.Object([]string{"space"}, map[string]*jsonschema.Schema{
			"space": SpaceArg(),
		}),
		Errors: []api.Kind{api.KindNotFound, api.KindAmbiguousSandbox, api.KindCapabilityMissing, api.KindHostCapabilityMissing,
			api.KindRelay, api.KindUnauthenticated, api.KindPermissionDenied, api.KindSpacesdNotAvailable, api.KindEnv, api.KindTimeout, api.KindCancelled},
		Result: "{space, unregistered (false when it was not on the relay)}",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct{ Space string }
			if err := spacetools.Decode(c, "relay_unregister_space", &a); err != nil {
				return nil, err
			}
			c.LogAttrs = append(c.LogAttrs, slog.String("space", a.Space))
			r, err := relayreg.Unregister(ctx, d.Registry, a.Space)
			if err != nil {
				return nil, err
			}
			d.forget()
			text := "space " + r.Space + " was not on the relay"
			if r.Unregistered {
				text = "space " + r.Space + " is off the relay"
			}
			return &mcpserve.Result{Text: text, Structured: r}, nil
		},
	}
}
