package client

import (
	"context"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
)

// Relay answers the Space's relay attachment (GET /v1/relay).
func (c *Client) Relay(ctx context.Context) (*api.RelayStatus, error) {
	var st api.RelayStatus
	return &st, c.JSON(ctx, http.MethodGet, api.PathRelay, nil, nil, &st)
}

// AttachRelay tells the Space to keep a session with a relay (PUT
// /v1/relay), or to re-attach with a new token; it answers the state once
// the Space attached or req.WaitMS ran out. Like every mutating call it
// carries an Idempotency-Key (the context's, or a fresh one), so a resend
// after a dropped link is answered, not run twice.
func (c *Client) AttachRelay(ctx context.Context, req api.RelayAttachRequest) (*api.RelayStatus, error) {
	var st api.RelayStatus
	return &st, c.JSON(ctx, http.MethodPut, api.PathRelay, nil, req, &st)
}

// DetachRelay tells the Space to leave its relay and forget it (DELETE
// /v1/relay); Detached is false when it was not attached.
func (c *Client) DetachRelay(ctx context.Context) (*api.RelayDetached, error) {
	var d api.RelayDetached
	return &d, c.JSON(ctx, http.MethodDelete, api.PathRelay, nil, nil, &d)
}
