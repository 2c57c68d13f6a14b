package streamsvc

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// windowPrefix starts the target name of a window stream.
const windowPrefix = "window:"

// targetName names a stream target in tickets and pipelines: "screen",
// or "window:<id>@<generation>". The generation is in the name, so that a
// ticket opens only the window it was minted for, not a later window that
// got its id, and a later window gets a capture of its own.
func targetName(ref desktop.WindowRef) string {
	if ref.ID == 0 {
		return "screen"
	}
	return windowPrefix + itoa(ref.ID) + "@" + strconv.FormatUint(ref.Gen, 10)
}

// ticketWindow reads the window id and generation of a ticket's target;
// ok is false for the screen's. A target without a generation (a ticket
// of an older daemon) has generation 0, which no window has.
func ticketWindow(target string) (id uint32, gen uint64, ok bool) {
	rest, ok := strings.CutPrefix(target, windowPrefix)
	if !ok {
		return 0, 0, false
	}
	idPart, genPart, _ := strings.Cut(rest, "@")
	n, err := strconv.ParseUint(idPart, 10, 32)
	if err != nil {
		return 0, 0, false
	}
	g, _ := strconv.ParseUint(genPart, 10, 64)
	return uint32(n), g, true
}

// streamTarget is what an offer opens: the screen (ref zero), or one
// window as it is now, with the channel that closes when it is destroyed.
type streamTarget struct {
	ref  desktop.WindowRef
	name string
	gone <-chan struct{}
}

// target resolves the target of an offer to windowID (0: the screen) and
// checks a ticket against it: a ticket of another target is forbidden, a
// ticket of a window that was closed since (its id may name another window
// now) is not_found.
func (s *Service) target(ctx context.Context, windowID uint32, t *server.Ticket) (streamTarget, error) {
	hint := "mint a ticket for this target (POST /v1/stream/tickets)"
	if windowID == 0 {
		if t != nil && t.Target != targetName(desktop.WindowRef{}) {
			return streamTarget{}, api.Errorf(api.KindForbidden, "the ticket opens the stream of %s, not of the screen", describeTarget(t.Target)).WithHint(hint)
		}
		return streamTarget{name: targetName(desktop.WindowRef{})}, nil
	}
	var gen uint64
	if t != nil {
		id, g, ok := ticketWindow(t.Target)
		if !ok || id != windowID {
			return streamTarget{}, api.Errorf(api.KindForbidden, "the ticket opens the stream of %s, not of window %d", describeTarget(t.Target), windowID).WithHint(hint)
		}
		gen = g
	}
	ref, err := s.d.WindowRef(ctx, windowID)
	if err != nil {
		return streamTarget{}, err
	}
	if t != nil && ref.Gen != gen {
		return streamTarget{}, api.Errorf(api.KindNotFound,
			"the ticket's window %d was closed (or the daemon restarted since the ticket was minted): the id may name another window now, which the ticket does not open", windowID).
			WithHint("ask the Space's owner for a new link (a ticket minted for the window as it is now)")
	}
	gone, err := s.d.WindowGone(ctx, ref)
	if err != nil {
		return streamTarget{}, err
	}
	return streamTarget{ref: ref, name: targetName(ref), gone: gone}, nil
}

// describeTarget names a ticket's target for a person: "the screen" or
// "window 123".
func describeTarget(target string) string {
	if id, _, ok := ticketWindow(target); ok {
		return "window " + itoa(id)
	}
	if target == targetName(desktop.WindowRef{}) {
		return "the screen"
	}
	return strconv.Quote(target)
}

// untilGone is ctx, ended also when gone closes (the target's window was
// destroyed): a window stream ends with its window, whatever window gets
// its id next.
func untilGone(ctx context.Context, tg streamTarget) context.Context {
	if tg.gone == nil {
		return ctx
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-tg.gone:
			cancel(fmt.Errorf("window %d was closed", tg.ref.ID))
		case <-ctx.Done(): // the viewer ended first
			cancel(nil)
		}
	}()
	return ctx
}
