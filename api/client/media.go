package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
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
// URLs a viewer uses with it; maxFPS 0 = the daemon's default.
func (c *Client) StreamEndpoint(ctx context.Context, req api.TicketRequest, maxFPS int) (*api.StreamEndpoint, error) {
	t, err := c.StreamTicket(ctx, req)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(c.BaseURL(), "/")
	offer := base + t.OfferPath
	if maxFPS > 0 {
		offer += "?max_fps=" + strconv.Itoa(maxFPS)
	}
	// The page reads both from its fragment: the ticket never travels in
	// a request line, and the offer URL tells it the target and rate.
	fragment := url.Values{"ticket": {t.Ticket}, "offer": {offer}}.Encode()
	return &api.StreamEndpoint{
		ViewerURL: base + api.PathViewer + "#" + fragment, OfferURL: offer,
		Ticket: t.Ticket, TicketExpiresAt: t.ExpiresAt, Codec: t.Codec, FrameSize: t.FrameSize,
		WindowID: t.WindowID, ViewOnly: t.ViewOnly,
	}, nil
}
