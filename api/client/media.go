package client

import (
	"context"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
)

// StreamTicket mints a media ticket for a stream (the screen, or one
// window), to hand to a viewer instead of the token.
func (c *Client) StreamTicket(ctx context.Context, req api.TicketRequest) (*api.StreamTicket, error) {
	var t api.StreamTicket
	return &t, c.JSON(ctx, http.MethodPost, api.PathStreamTickets, nil, req, &t)
}
