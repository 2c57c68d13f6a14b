package client

import (
	"context"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
)

// A11yTree reads the accessibility tree of a window (0: the focused one).
func (c *Client) A11yTree(ctx context.Context, req api.A11yTreeRequest) (*api.A11yTree, error) {
	var t api.A11yTree
	return &t, c.JSON(ctx, http.MethodPost, api.PathA11yTree, nil, req, &t)
}

// A11yFind finds the elements of a window that match q.
func (c *Client) A11yFind(ctx context.Context, q api.A11yQuery) ([]api.A11yFound, error) {
	var res api.A11yFindResult
	if err := c.JSON(ctx, http.MethodPost, api.PathA11yFind, nil, q, &res); err != nil {
		return nil, err
	}
	return res.Elements, nil
}

// A11yAct acts on an element of a tree by its toolkit's own action.
func (c *Client) A11yAct(ctx context.Context, a api.A11yAction) error {
	return c.JSON(ctx, http.MethodPost, api.PathA11yAction, nil, a, nil)
}
