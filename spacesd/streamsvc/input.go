package streamsvc

import (
	"context"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
)

// releaseTimeout bounds the release of a leaving viewer's held keys and
// buttons.
const releaseTimeout = 2 * time.Second

// viewerInput injects one viewer of the screen's input and pointer
// messages through XTEST, in the screen's pixels. (A window stream's
// viewer has a windowInput, confined to the window: confine.go.)
type viewerInput struct {
	d    *desktop.Desktop
	held *desktop.Held
}

func (in *viewerInput) Input(ctx context.Context, m api.ViewerInput) error {
	var p api.Pointer
	var err error
	switch m.Type {
	case api.InputMove:
		_, err = in.d.MoveMouse(ctx, api.MouseMoveRequest{X: m.X, Y: m.Y, Pointer: p})
	case api.InputButton:
		switch m.Action {
		case api.ActionDown, api.ActionUp:
			_, err = in.held.Button(ctx, m.Button, m.Action == api.ActionDown, p, m.X, m.Y)
		default:
			_, err = in.d.Click(ctx, api.ClickRequest{X: m.X, Y: m.Y, Button: m.Button, Count: m.Count, Pointer: p})
		}
	case api.InputKey:
		switch m.Action {
		case api.ActionDown, api.ActionUp:
			_, err = in.held.Key(ctx, m.Key, m.Action == api.ActionDown)
		default:
			_, err = in.d.Key(ctx, m.Key)
		}
	case api.InputText:
		_, err = in.d.Type(ctx, m.Text)
	case api.InputScroll:
		x, y := m.X, m.Y
		_, err = in.d.Scroll(ctx, api.ScrollRequest{X: &x, Y: &y, DX: m.DX, DY: m.DY, Pointer: p})
	default:
		err = api.Errorf(api.KindInvalidArgument, "input message of type %q", m.Type)
	}
	return err
}

// Close releases what the viewer still holds down.
func (in *viewerInput) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = in.held.Close(ctx)
}
