package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// streamArgs are the arguments stream_endpoint and stream_space_window share.
type streamArgs struct {
	WindowID  uint32 `json:"window_id"`
	AppName   string `json:"app_name"`
	Title     string `json:"title"`
	MaxFPS    int    `json:"max_fps"`
	MaxWidth  int    `json:"max_width"`
	MaxHeight int    `json:"max_height"`
	TicketTTL int    `json:"ticket_ttl"`
	ViewOnly  bool   `json:"view_only"`
	Audio     bool   `json:"audio"`
}

func streamProps(extra map[string]*jsonschema.Schema) map[string]*jsonschema.Schema {
	props := map[string]*jsonschema.Schema{
		"max_fps": spacetools.Integer("Highest frame rate of the stream.", 1, api.MaxStreamFPS, api.DefaultStreamFPS),
		"max_width": spacetools.Integer("Widest frame the viewer wants: a wider screen or window is scaled down to it, keeping its aspect ratio "+
			"(never up); input on the frames lands where they show. Default: the target's own size.", api.MinStreamDimension, api.MaxStreamDimension, nil),
		"max_height": spacetools.Integer("Tallest frame the viewer wants, as max_width.", api.MinStreamDimension, api.MaxStreamDimension, nil),
		"ticket_ttl": spacetools.Integer("Seconds the ticket opens the stream (a stream opened lives on until its viewer leaves).", 1, api.MaxTicketTTLSeconds, api.DefaultTicketTTLSeconds),
		"view_only":  spacetools.Boolean("A viewer that sees but cannot send input (the Space refuses its input channels).", false),
		"audio": spacetools.Boolean("Add the desktop's sound (Opus, in sync with the picture) to the stream: the offer URL asks for it (audio=1) "+
			"and the viewer page plays it once the person clicks for sound. Needs the desktop_audio feature (a sound server in the Space).", false),
	}
	for k, v := range extra {
		props[k] = v
	}
	return props
}

const streamResult = "{viewer_url, offer_url, ticket, ticket_expires_at, codec, frame_size: {width, height}, window_id?, view_only, route, ice_url, " +
	"viewers?: [{id, target, window_id?, view_only, by_ticket, connected, path?: {media, local, remote, protocol}, started_at, name, role?}]}"

// streamHow is what both stream tools say of the answer's links and route.
const streamHow = " On a relay:<computer> (route \"relay\") the links go through the relay's HTTPS and open from any network; " +
	"the media goes direct when ICE finds a way, else through the relay's TURN. Route \"direct\" is the Space's own address. " +
	"The links carry the ticket, never a token; a WHEP client of its own first GETs ice_url with the ticket as its bearer for the ICE servers. " +
	"viewers are the target's live viewers when the answer was made, each with the path its media took once connected " +
	"(path.media \"direct\", or \"turn\" through the relay's TURN server): call again to see a new viewer's path."

func streamEndpointTool() *spacetools.Tool {
	return &spacetools.Tool{
		Name:   "stream_endpoint",
		Title:  "Stream a Space's screen or window",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: spacetools.OutputOf[api.StreamEndpoint](),
		Description: "Mint a short-lived ticket to watch a Space's screen (or one window, by window_id or app_name) over WebRTC, " +
			"and answer the viewer page URL and the absolute WHEP offer URL (POST an SDP offer with Authorization: Bearer <ticket>)." + streamHow,
		Schema: spacetools.Object(nil, streamProps(map[string]*jsonschema.Schema{
			"window_id": spacetools.Integer("Stream this window (from list_space_windows) instead of the screen.", 0, 0, nil),
			"app_name":  spacetools.Str("Stream the one window whose app name contains this (case-insensitive) instead of the screen."),
		})),
		Requires: []api.Feature{api.FeatureDesktopStream},
		Errors:   []api.Kind{api.KindNotFound},
		Result:   streamResult,
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a streamArgs
			if err := spacetools.Decode(c, "stream_endpoint", &a); err != nil {
				return nil, err
			}
			if a.WindowID == 0 && a.AppName != "" {
				w, err := windowByName(ctx, c.Space.Client, a.AppName, "")
				if err != nil {
					return nil, err
				}
				a.WindowID = w.WindowID
			}
			if a.WindowID != 0 {
				if err := c.Space.Caps.Require(api.FeatureWindowStream); err != nil {
					return nil, err
				}
			}
			return endpoint(ctx, c.Space.Client, c.Space.Caps, a)
		},
	}
}

func streamSpaceWindowTool() *spacetools.Tool {
	return &spacetools.Tool{
		Name:   "stream_space_window",
		Title:  "Stream one window of a Space",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: spacetools.OutputOf[api.StreamEndpoint](),
		Description: "Mint a short-lived ticket to watch one window of a Space over WebRTC (its own content, also where other windows cover it), " +
			"found by app name or title, and answer the viewer page URL and the absolute WHEP offer URL." + streamHow,
		Schema: spacetools.Object(nil, streamProps(map[string]*jsonschema.Schema{
			"app_name": spacetools.Str("The window's app name contains this (case-insensitive)."),
			"title":    spacetools.Str("The window's title contains this (case-insensitive)."),
		})),
		Requires: []api.Feature{api.FeatureWindowStream},
		Errors:   []api.Kind{api.KindNotFound},
		Result:   streamResult,
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a streamArgs
			if err := spacetools.Decode(c, "stream_space_window", &a); err != nil {
				return nil, err
			}
			if a.AppName == "" && a.Title == "" {
				return nil, api.Errorf(api.KindInvalidArgument, "stream_space_window: give app_name or title (or use stream_endpoint with window_id)")
			}
			w, err := windowByName(ctx, c.Space.Client, a.AppName, a.Title)
			if err != nil {
				return nil, err
			}
			a.WindowID = w.WindowID
			return endpoint(ctx, c.Space.Client, c.Space.Caps, a)
		},
	}
}

// windowByName finds the one window matching an app name and a title (each a
// case-insensitive substring; "" matches all).
func windowByName(ctx context.Context, c *client.Client, appName, title string) (api.Window, error) {
	ws, err := c.Windows(ctx, appName)
	if err != nil {
		return api.Window{}, err
	}
	var found []api.Window
	for _, w := range ws {
		if title == "" || strings.Contains(strings.ToLower(w.Title), strings.ToLower(title)) {
			found = append(found, w)
		}
	}
	what := fmt.Sprintf("app_name %q title %q", appName, title)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return api.Window{}, api.Errorf(api.KindNotFound, "no window matches %s; list them with list_space_windows", what)
	}
	var names []string
	for _, w := range found {
		names = append(names, fmt.Sprintf("%d %s %q", w.WindowID, w.AppName, w.Title))
	}
	return api.Window{}, api.Errorf(api.KindInvalidArgument, "%d windows match %s: %s; narrow it, or pass window_id", len(found), what, strings.Join(names, "; "))
}

func endpoint(ctx context.Context, c *client.Client, caps *api.Capabilities, a streamArgs) (*mcpserve.Result, error) {
	if a.Audio {
		if err := caps.Require(api.FeatureDesktopAudio); err != nil {
			return nil, err
		}
	}
	ep, err := c.StreamEndpoint(ctx, api.TicketRequest{WindowID: a.WindowID, ViewOnly: a.ViewOnly, TTLSeconds: a.TicketTTL},
		api.StreamOptions{MaxFPS: a.MaxFPS, MaxWidth: a.MaxWidth, MaxHeight: a.MaxHeight, Audio: a.Audio})
	if err != nil {
		return nil, err
	}
	// The viewers are a look at the streams already open, not the
	// answer's point: a daemon that cannot list them (an older one, 404)
	// leaves them out.
	if vs, err := c.StreamViewers(ctx, ep.WindowID); err == nil {
		ep.Viewers = vs
	}
	what := "the screen"
	if ep.WindowID != 0 {
		what = fmt.Sprintf("window %d", ep.WindowID)
	}
	mode := "full control"
	if ep.ViewOnly {
		mode = "view only"
	}
	if a.Audio {
		what += " with its sound"
	}
	text := fmt.Sprintf("stream of %s (%dx%d, %s, %s); open %s\nroute: %s\nWHEP offer URL: %s (Authorization: Bearer <ticket>)\nICE servers: GET %s (Authorization: Bearer <ticket>)\nticket expires %s",
		what, ep.FrameSize.Width, ep.FrameSize.Height, ep.Codec, mode, ep.ViewerURL, routeText(ep.Route), ep.OfferURL, ep.ICEURL,
		ep.TicketExpiresAt.Format("15:04:05 MST"))
	text += "\n" + ViewersText(ep.Viewers)
	return &mcpserve.Result{Text: text, Structured: ep}, nil
}

// ViewersText says a target's live viewers and their media's paths to a
// person, on one line.
func ViewersText(vs []api.StreamSession) string {
	if len(vs) == 0 {
		return "viewers: none live"
	}
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		how := "connecting"
		if v.Path != nil {
			how = fmt.Sprintf("%s (%s %s to %s)", v.Path.Media, v.Path.Protocol, v.Path.Local, v.Path.Remote)
		}
		by := "token"
		if v.ByTicket {
			by = "ticket"
		}
		who := v.Name
		if who == "" {
			who = api.PresenceOwnerName
		}
		if v.Role != "" {
			who += " (" + v.Role + ")"
		}
		parts = append(parts, fmt.Sprintf("%s %s by %s: %s", who, v.ID[:min(8, len(v.ID))], by, how))
	}
	return fmt.Sprintf("viewers: %d live: %s", len(vs), strings.Join(parts, "; "))
}

// routeText says a StreamEndpoint's route to a person.
func routeText(route string) string {
	if route == api.RouteRelay {
		return "through the relay (the page and the offer over its HTTPS; the media direct when ICE finds a way, else through its TURN server)"
	}
	return "direct (the Space's own address)"
}
