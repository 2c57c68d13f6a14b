package desktop

import (
	"context"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

// CursorPosition is where the pointer is now, in screen pixels: the point
// a click without coordinates lands on.
func (d *Desktop) CursorPosition(ctx context.Context) (api.InputResult, error) {
	x, err := d.use(ctx, api.FeatureInput)
	if err != nil {
		return api.InputResult{}, err
	}
	p, err := await(ctx, x, "query the pointer", func() (*xproto.QueryPointerReply, error) {
		return xproto.QueryPointer(x.c, x.root).Reply()
	})
	if err != nil {
		return api.InputResult{}, err
	}
	return api.InputResult{X: int(p.RootX), Y: int(p.RootY)}, nil
}
