package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// StreamTicket mints a media ticket for a stream (the screen, or one
// window), to hand to a viewer instead of the token.
func (c *Client) StreamTicket(ctx context.Context, req api.TicketRequest) (*api.StreamTicket, error) {
	var t api.StreamTicket
	return &t, c.JSON(ctx, http.MethodPost, api.PathStreamTickets, nil, req, &t)
}

// StreamEndpoint mints a ticket for a stream and answers the absolute
// URLs a viewer uses with it, the offer URL asking for o (zero fields:
// the daemon's defaults). FrameSize is the size of the frames o asks for
// now (the target's, scaled down to o's bounds). Options out of range are
// invalid_argument here, before a ticket is minted. Route says whether
// the client reaches its Space through cua-relay (a base URL under the
// relay's /c/<computer>): the page and the offer then go through the
// relay too, and ICEURL answers its TURN server for each view.
func (c *Client) StreamEndpoint(ctx context.Context, req api.TicketRequest, o api.StreamOptions) (*api.StreamEndpoint, error) {
	query := o.Query()
	if q, err := url.ParseQuery(query); err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "stream options %+v: %v", o, err)
	} else if _, err := api.ParseStreamQuery(q); err != nil {
		return nil, err
	}
	t, err := c.StreamTicket(ctx, req)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(c.BaseURL(), "/")
	offer := base + t.OfferPath
	if query != "" {
		offer += "?" + query
	}
	// The page reads both from its fragment: the ticket never travels in
	// a request line, and the offer URL tells it the target, rate and size.
	fragment := api.ViewerFragment(t.Ticket, offer)
	route := api.RouteDirect
	if api.IsRelayComputerURL(base) {
		route = api.RouteRelay
	}
	return &api.StreamEndpoint{
		ViewerURL: base + api.PathViewer + "#" + fragment, OfferURL: offer,
		Ticket: t.Ticket, TicketExpiresAt: t.ExpiresAt, Codec: t.Codec,
		FrameSize: api.StreamFrameSize(t.FrameSize.Width, t.FrameSize.Height, o.MaxWidth, o.MaxHeight),
		WindowID:  t.WindowID, ViewOnly: t.ViewOnly,
		Route: route, ICEURL: base + api.PathStreamICE,
	}, nil
}

// StreamICE asks the ICE servers a viewer holding ticket should use
// (GET api.PathStreamICE with the ticket as its bearer, never the
// client's token, as the viewer does): none from a Space reached on its
// own port; through cua-relay, the relay's TURN server with a credential
// for this one view.
func (c *Client) StreamICE(ctx context.Context, ticket string) (api.StreamICE, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(api.PathStreamICE, nil), nil)
	if err != nil {
		return api.StreamICE{}, api.Errorf(api.KindInvalidArgument, "GET %s: %w", api.PathStreamICE, err)
	}
	req.Header.Set("Authorization", "Bearer "+ticket)
	resp, err := c.http.Do(req)
	if err != nil {
		return api.StreamICE{}, transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return api.StreamICE{}, decodeError(resp)
	}
	var ice api.StreamICE
	if err := decodeJSON(io.LimitReader(resp.Body, 1<<20), &ice); err != nil {
		return api.StreamICE{}, err
	}
	return ice, nil
}

// StreamSessions lists the Space's live viewers (GET
// api.PathStreamSessions, the token only), each with its target and,
// once connected, its media's path (api.MediaDirect or api.MediaTURN).
func (c *Client) StreamSessions(ctx context.Context) ([]api.StreamSession, error) {
	var s api.StreamSessions
	if err := c.JSON(ctx, http.MethodGet, api.PathStreamSessions, nil, nil, &s); err != nil {
		return nil, err
	}
	return s.Sessions, nil
}

// StreamViewers are the live viewers of one target (windowID 0: the
// screen), as StreamEndpoint.Viewers holds them.
func (c *Client) StreamViewers(ctx context.Context, windowID uint32) ([]api.StreamSession, error) {
	all, err := c.StreamSessions(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.StreamSession
	for _, s := range all {
		if s.Target == api.StreamTarget(windowID) {
			out = append(out, s)
		}
	}
	return out, nil
}
