package streamsvc

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"slices"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// cursorRetry is the pause before the cursor is followed again after the
// display failed (it reconnects on the next try).
const cursorRetry = time.Second

// control is what a viewer's control channel carries from the service:
// the pointer of its target, renewals of the ticket it came with (a
// viewer that came with the token needs none), and who else watches
// (presence.go).
func (s *Service) control(id string, windowID uint32, t *server.Ticket) func(context.Context, func(api.ViewerControl) error) {
	return func(ctx context.Context, send func(api.ViewerControl) error) {
		s.presence.open(ctx, id, send)
		var wg sync.WaitGroup
		if t != nil {
			wg.Go(func() { s.renew(ctx, *t, send) })
		}
		s.followCursor(ctx, windowID, send)
		wg.Wait()
	}
}

// renew sends the viewer a fresh ticket of its target and mode now and
// every api.TicketRenewalInterval, so that it can reconnect after a drop
// for as long as it keeps watching.
func (s *Service) renew(ctx context.Context, t server.Ticket, send func(api.ViewerControl) error) {
	tick := time.NewTicker(api.TicketRenewalInterval)
	defer tick.Stop()
	for {
		// Whole seconds: the ticket carries its expiry so.
		exp := time.Now().Add(api.TicketRenewalTTL).Truncate(time.Second)
		if t.Expires.After(exp) {
			exp = t.Expires
		}
		// The renewal keeps the ticket's ID: its viewers and sessions are
		// the ticket's (see Service.admit, deleteSession).
		tk, err := s.host.MintTicket(server.Ticket{Scope: t.Scope, Target: t.Target, ViewOnly: t.ViewOnly, Expires: exp, ID: t.ID,
			Person: t.Person, Role: t.Role, PersonName: t.PersonName})
		if err == nil {
			exp = exp.UTC()
			err = send(api.ViewerControl{Type: api.ControlTicket, Ticket: tk, ExpiresAt: &exp})
		}
		if err != nil && !errors.Is(err, rtc.ErrControlBusy) {
			s.log.Debug("stream viewer: ticket renewal not sent", "stream", t.Target, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// followCursor sends the pointer of the target until ctx ends or its
// window goes; a failing display is followed again once it answers.
func (s *Service) followCursor(ctx context.Context, windowID uint32, send func(api.ViewerControl) error) {
	shapes := &sentShapes{}
	for {
		err := s.d.WatchCursor(ctx, windowID, func(c desktop.Cursor) {
			m := &api.ViewerCursor{X: c.X, Y: c.Y, Serial: c.Serial}
			if c.Shape != nil {
				shapes.latest = c.Shape
			}
			fresh := !shapes.has(c.Serial)
			if fresh && shapes.latest != nil {
				m.Shape = cursorShape(shapes.latest)
			}
			if send(api.ViewerControl{Type: api.ControlCursor, Cursor: m}) == nil && fresh {
				shapes.add(c.Serial)
			}
		})
		if ctx.Err() != nil || api.KindOf(err) == api.KindNotFound || api.KindOf(err) == api.KindCapabilityMissing {
			return
		}
		s.log.Debug("stream viewer: following the cursor failed; trying again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(cursorRetry):
		}
	}
}

// sentShapes are the cursor serials a viewer keeps: the last
// api.MaxCursorShapes it was sent, in the order sent, as the viewer keeps
// them (the control channel is ordered, so both lists are the same).
type sentShapes struct {
	serials []uint32
	// latest is the shape of the current serial, kept to send it again
	// once the viewer has dropped it, or when a busy channel refused it.
	latest *desktop.CursorShape
}

func (s *sentShapes) has(serial uint32) bool { return slices.Contains(s.serials, serial) }

func (s *sentShapes) add(serial uint32) {
	if len(s.serials) == api.MaxCursorShapes {
		s.serials = slices.Delete(s.serials, 0, 1)
	}
	s.serials = append(s.serials, serial)
}

// cursorShape encodes a shape for the wire; an image too large to send
// goes without it.
func cursorShape(c *desktop.CursorShape) *api.CursorShape {
	out := &api.CursorShape{HotX: c.HotX, HotY: c.HotY}
	if c.Image == nil {
		return out
	}
	out.Width, out.Height = c.Image.Rect.Dx(), c.Image.Rect.Dy()
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, c.Image); err == nil && b.Len() <= api.MaxCursorPNGBytes {
		out.PNG = b.Bytes()
	}
	return out
}
