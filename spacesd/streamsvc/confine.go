package streamsvc

import (
	"context"
	"errors"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Metrics of window streams' confined input: what a viewer sent that
// would have reached another window than its stream's, and was dropped.
const (
	// MetricPointerDropped counts moves, buttons and scrolls outside the
	// window or where another window covers it.
	MetricPointerDropped = "cua_spacesd_stream_pointer_dropped_total"
	// MetricKeysDropped counts keys and texts sent while another window
	// had the keyboard focus (or that lost it while they went out).
	MetricKeysDropped = "cua_spacesd_stream_keys_dropped_total"
)

// newInput is the input of one full viewer: the whole desktop for the
// screen's stream, the window alone for a window's (ticket or token
// alike: a window's stream whose input reached other windows would
// surprise whoever shared it).
func (s *Service) newInput(tg streamTarget) rtc.Input {
	if tg.ref.ID == 0 {
		return &viewerInput{d: s.d, held: s.d.NewHeld()}
	}
	return &windowInput{w: s.d.NewWindowInput(tg.ref),
		pointer: s.host.Metrics.Counter(MetricPointerDropped), keys: s.host.Metrics.Counter(MetricKeysDropped)}
}

// windowInput injects one viewer's input into its stream's window only
// (desktop.WindowInput); what it drops is counted.
type windowInput struct {
	w             *desktop.WindowInput
	pointer, keys server.Counter
}

func (in *windowInput) Input(ctx context.Context, m api.ViewerInput) error {
	var err error
	held := m.Action == api.ActionDown || m.Action == api.ActionUp
	down := m.Action == api.ActionDown
	dropped := in.keys
	switch m.Type {
	case api.InputMove:
		_, err = in.w.Move(ctx, m.X, m.Y)
		dropped = in.pointer
	case api.InputButton:
		if held {
			_, err = in.w.Button(ctx, m.Button, down, m.X, m.Y)
		} else {
			_, err = in.w.Click(ctx, api.ClickRequest{X: m.X, Y: m.Y, Button: m.Button, Count: m.Count})
		}
		dropped = in.pointer
	case api.InputScroll:
		_, err = in.w.Scroll(ctx, m.X, m.Y, m.DX, m.DY)
		dropped = in.pointer
	case api.InputKey:
		if held {
			_, err = in.w.HoldKey(ctx, m.Key, down)
		} else {
			_, err = in.w.Key(ctx, m.Key)
		}
	case api.InputText:
		_, err = in.w.Type(ctx, m.Text)
	default:
		return api.Errorf(api.KindInvalidArgument, "input message of type %q", m.Type)
	}
	if errors.Is(err, desktop.ErrDropped) {
		dropped.Add(1)
		if m.Type == api.InputMove {
			// Counted, not answered: a pointer hovering outside the
			// window sends many, and the pointer channel is lossy anyway.
			return nil
		}
	}
	return err
}

// Close releases what the viewer still holds down.
func (in *windowInput) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = in.w.Close(ctx)
}
