package client

import (
	"context"
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
// invalid_argument here, before a ticket is minted.
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
	return &api.StreamEndpoint{
		ViewerURL: base + api.PathViewer + "#" + fragment, OfferURL: offer,
		Ticket: t.Ticket, TicketExpiresAt: t.ExpiresAt, Codec: t.Codec,
		FrameSize: api.StreamFrameSize(t.FrameSize.Width, t.FrameSize.Height, o.MaxWidth, o.MaxHeight),
		WindowID:  t.WindowID, ViewOnly: t.ViewOnly,
	}, nil
}
