package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/tools"
)

const viewUsage = "view SPACE [--window ID] [--view-only] [--audio] [--ttl SECONDS] [--max-width PX] [--max-height PX] [--open]"

// runView prints the URL of the Space's desktop viewer with a fresh
// ticket: the page takes the ticket from the URL's fragment, so opening
// it never sends the ticket in a request line. A URL is what a person can
// open anywhere (the bridge's machine may have no browser); --open also
// opens it here. For a relay:<computer> the link is under the relay's
// https://RELAY/c/<computer>/ and opens from any network; it carries the
// stream's ticket only, never the user's relay token.
func (env Env) runView(ctx context.Context, args []string) int {
	fs := env.newFlags("view", viewUsage)
	window := fs.Uint("window", 0, "stream this window (an id from the windows list) instead of the screen")
	viewOnly := fs.Bool("view-only", false, "a viewer that sees but cannot send input")
	withAudio := fs.Bool("audio", false, "the desktop's sound too (the page plays it once you click for sound); needs desktop_audio")
	ttl := fs.Int("ttl", api.DefaultTicketTTLSeconds, "seconds the link opens the stream (an open viewer keeps reconnecting while it watches)")
	open := fs.Bool("open", false, "open the link in the browser too: $BROWSER, else xdg-open (open on macOS); the link is then on the browser's command line for its short life")
	maxWidth := fs.Int("max-width", 0, "scale the stream down to at most this width, keeping its aspect ratio (0 = the target's size)")
	maxHeight := fs.Int("max-height", 0, "scale the stream down to at most this height, keeping its aspect ratio (0 = the target's size)")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return ExitUsage
	}
	c, _, err := env.client(pos[0])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	feature := api.FeatureDesktopStream
	if *window != 0 {
		feature = api.FeatureWindowStream
	}
	if err := caps.Require(feature); err != nil {
		return env.fail(ExitFailure, err)
	}
	if *withAudio {
		if err := caps.Require(api.FeatureDesktopAudio); err != nil {
			return env.fail(ExitFailure, err)
		}
	}
	ep, err := c.StreamEndpoint(ctx, api.TicketRequest{WindowID: uint32(*window), ViewOnly: *viewOnly, TTLSeconds: *ttl},
		api.StreamOptions{MaxWidth: *maxWidth, MaxHeight: *maxHeight, Audio: *withAudio})
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	fmt.Fprintln(env.Stdout, ep.ViewerURL)
	mode := "full control"
	if ep.ViewOnly {
		mode = "view only"
	}
	if *withAudio {
		mode += ", with sound"
	}
	fmt.Fprintf(env.Stderr, "%dx%d %s, %s; the link opens the stream until %s\n",
		ep.FrameSize.Width, ep.FrameSize.Height, strings.ToUpper(ep.Codec), mode, ep.TicketExpiresAt.Local().Format("15:04:05"))
	if ep.Route == api.RouteRelay {
		fmt.Fprintln(env.Stderr, "route: through the relay (the page and the offer over its HTTPS; the media direct when ICE finds a way, else through its TURN server)")
	} else {
		fmt.Fprintln(env.Stderr, "route: direct, to the Space's own address")
	}
	// The target's live viewers and their paths, when the daemon lists
	// them (an older one does not: nothing is printed).
	if vs, err := c.StreamViewers(ctx, ep.WindowID); err == nil {
		fmt.Fprintln(env.Stderr, tools.ViewersText(vs))
	}
	if *open {
		name, err := openURL(ctx, env.getenv, env.Stderr, ep.ViewerURL)
		if err != nil {
			return env.fail(ExitFailure, api.Errorf(api.KindHostCapabilityMissing, "open the viewer: %v", err).
				WithHint("open the URL above in a browser yourself"))
		}
		fmt.Fprintf(env.Stderr, "opened with %s\n", name)
	}
	return 0
}
