package tools

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/relayreg"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// The sharing tools resolve their Space themselves (NoSpace), as the relay
// tools do: relayreg holds the one implementation the CLI shares.

// shareErrors are the kinds the sharing tools answer: the seed's, and
// what reaching the Space and the relay can answer besides.
var shareErrors = []api.Kind{api.KindInvalidArgument, api.KindNotFound, api.KindAmbiguousSandbox, api.KindCapabilityMissing,
	api.KindHostCapabilityMissing, api.KindRelay, api.KindPermissionDenied, api.KindUnauthenticated,
	api.KindSpacesdNotAvailable, api.KindEnv, api.KindTimeout, api.KindCancelled}

const shareResult = "{space, machine (the relay computer it is shared as; empty when not shared), " +
	"invitee_space (what the people it is shared with open: relay:<computer>), url, online, shares: [{who, role: viewer or editor, connected}]}"

func shareSpaceTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:    "share_space",
		NoSpace: true,
		Title:   "Let someone in your team watch or edit a Space",
		Hints:   mcpserve.Hints{Idempotent: true, OpenWorld: true},
		Output:  spacetools.OutputOf[relayreg.Shared](),
		Description: "Shares the Space through the relay with one person in your own team, by name or verified email, " +
			"or with the whole team as team:<id> (as a viewer or an editor). " +
			"Sharing is for teams: an account in no team gets permission_denied sharing_needs_team (\"" + sharingNeedsTeam + "\"), " +
			"and someone outside your team gets share_outside_team. " +
			"A viewer watches a view-only stream: the Space's cua-spacesd refuses their input, shell, files and MCP. An editor gets full use. " +
			"Sharing again changes the role. A relay:<computer> is shared directly; any other Space is attached to the relay on its first share " +
			"(its own driver dials out, so it needs no inbound port), and leaves it again when unshare_space ends every share. Invitees open invitee_space. " +
			"The bridge must be logged in to the relay (cua-bridge relay login).",
		Schema: spacetools.Object([]string{"space", "who"}, map[string]*jsonschema.Schema{
			"space": SpaceArg(),
			"who":   spacetools.NonEmpty("Who to share with: a user of your team by name or email, or team:<id> for the whole team."),
			"role":  spacetools.Enum("viewer: watch only; editor: full use.", "viewer", "viewer", "editor"),
		}),
		Errors: shareErrors,
		Result: shareResult,
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct{ Space, Who, Role string }
			if err := spacetools.Decode(c, "share_space", &a); err != nil {
				return nil, err
			}
			c.LogAttrs = append(c.LogAttrs, slog.String("space", a.Space))
			role, err := relayreg.ParseRole(a.Role)
			if err != nil {
				return nil, err
			}
			s, err := relayreg.Share(ctx, d.Registry, a.Space, a.Who, role)
			if err != nil {
				return nil, err
			}
			d.forget()
			return &mcpserve.Result{Text: SharedText(s), Structured: s}, nil
		},
	}
}

// sharingNeedsTeam is the seed's text of the refusal, as the relay says it.
const sharingNeedsTeam = "Sharing is for teams. Start a team to share this Space."

func unshareSpaceTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:    "unshare_space",
		NoSpace: true,
		Title:   "Stop sharing a Space with an account, or with everyone",
		Hints:   mcpserve.Hints{Destructive: true, Idempotent: true, OpenWorld: true},
		Output:  spacetools.OutputOf[relayreg.Shared](),
		Description: "Removes one account (or everyone) at once: the relay cuts their open streams and refuses new calls. " +
			"With no who, the Space stops being shared, and a Space that was attached to the relay only because it was shared leaves the relay; " +
			"one registered with relay_register_space stays (the owner's own reach is not a share).",
		Schema: spacetools.Object([]string{"space"}, map[string]*jsonschema.Schema{
			"space": SpaceArg(),
			"who":   spacetools.Str("Who to stop sharing with (as share_space took it); omit for everyone."),
		}),
		Errors: shareErrors,
		Result: shareResult,
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct{ Space, Who string }
			if err := spacetools.Decode(c, "unshare_space", &a); err != nil {
				return nil, err
			}
			c.LogAttrs = append(c.LogAttrs, slog.String("space", a.Space))
			s, err := relayreg.Unshare(ctx, d.Registry, a.Space, a.Who)
			if err != nil {
				return nil, err
			}
			d.forget()
			return &mcpserve.Result{Text: SharedText(s), Structured: s}, nil
		},
	}
}

func spaceSharesTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:    "space_shares",
		NoSpace: true,
		Title:   "List who a Space is shared with",
		Hints:   mcpserve.Hints{ReadOnly: true, Idempotent: true, OpenWorld: true},
		Output:  spacetools.OutputOf[relayreg.Shared](),
		Description: "Who the Space is shared with, in which role, and who of them is connected through the relay now. " +
			"With audit, the newest owner-side audit lines too (share, unshare, attach, detach).",
		Schema: spacetools.Object([]string{"space"}, map[string]*jsonschema.Schema{
			"space": SpaceArg(),
			"audit": spacetools.Boolean("Add the newest audit lines.", false),
		}),
		Errors: []api.Kind{api.KindInvalidArgument, api.KindNotFound, api.KindAmbiguousSandbox, api.KindCapabilityMissing,
			api.KindHostCapabilityMissing, api.KindRelay, api.KindUnauthenticated, api.KindPermissionDenied,
			api.KindSpacesdNotAvailable, api.KindEnv, api.KindTimeout, api.KindCancelled},
		Result: "the shares (see share_space) and, with audit, audit: [{ts_ms, action: share, unshare, attach or detach, space, detail}]",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct {
				Space string
				Audit bool
			}
			if err := spacetools.Decode(c, "space_shares", &a); err != nil {
				return nil, err
			}
			c.LogAttrs = append(c.LogAttrs, slog.String("space", a.Space))
			s, err := relayreg.Shares(ctx, d.Registry, a.Space, a.Audit)
			if err != nil {
				return nil, err
			}
			text := SharedText(s)
			for _, l := range s.Audit {
				text += fmt.Sprintf("\n%d %s %s: %s", l.TSMS, l.Action, l.Space, l.Detail)
			}
			return &mcpserve.Result{Text: text, Structured: s}, nil
		},
	}
}

// SharedText says a Space's shares in a line or a few.
func SharedText(s *relayreg.Shared) string {
	if s.Machine == "" {
		return "space " + s.Space + " is not shared (not on the relay)"
	}
	var b strings.Builder
	state := "offline"
	if s.Online {
		state = "online"
	}
	fmt.Fprintf(&b, "space %s is %s on the relay as %s (%s)", s.Space, state, s.InviteeSpace, s.URL)
	if len(s.Shares) == 0 {
		b.WriteString(", shared with no one")
	}
	for _, sh := range s.Shares {
		conn := ""
		if sh.Connected {
			conn = ", connected"
		}
		fmt.Fprintf(&b, "\n%s: %s%s", sh.Who, sh.Role, conn)
	}
	return b.String()
}
