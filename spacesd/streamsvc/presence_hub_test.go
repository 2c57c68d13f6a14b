package streamsvc

import (
	"context"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc"
)

// hubViewer is a viewer's control channel as the hub sees it: what it
// was sent, and whether it is behind (its send answers ErrControlBusy).
type hubViewer struct {
	got  []api.ViewerControl
	busy bool
}

func (v *hubViewer) send(m api.ViewerControl) error {
	if v.busy {
		return rtc.ErrControlBusy
	}
	v.got = append(v.got, m)
	return nil
}

// take answers what v was sent since the last take.
func (v *hubViewer) take() []api.ViewerControl {
	got := v.got
	v.got = nil
	return got
}

// The hub tells who on open, join and leave; relays moves to the other
// viewers of the mover's target only; skips a viewer that is behind
// without holding up the others, and sends it the who it missed before
// its next move; and makes no member of a viewer that ended.
func TestPresenceHub(t *testing.T) {
	p := newPresence()
	ctx := context.Background()
	a, b, c, d := &hubViewer{}, &hubViewer{}, &hubViewer{}, &hubViewer{}
	whoLen := func(name string, got []api.ViewerControl, n int) {
		t.Helper()
		if len(got) != 1 || got[0].Type != api.ControlWho || len(got[0].Viewers) != n {
			t.Fatalf("%s was sent %+v, want one who of %d", name, got, n)
		}
	}
	p.join("a", "screen", api.PresenceViewer{Name: "alice", Role: "owner", Target: api.TargetScreen})
	p.open(ctx, "a", a.send)
	whoLen("a", a.take(), 1)
	p.open(ctx, "b", b.send) // its channel before its join: told at the join
	if got := b.take(); len(got) != 0 {
		t.Fatalf("b was sent %+v before it joined", got)
	}
	p.join("b", "screen", api.PresenceViewer{Name: "bob", Role: "viewer", ViewOnly: true, Target: api.TargetScreen})
	p.join("c", "window:1@1", api.PresenceViewer{Name: "carol", Target: "window:1"})
	p.open(ctx, "c", c.send)
	whoLen("a", a.take()[1:], 3) // b's join, then c's
	bs := b.take()
	whoLen("b", bs[1:], 3)
	if vs := bs[0].Viewers; vs[0].Name != "alice" || vs[0].You || vs[1].Name != "bob" || !vs[1].You || vs[1].ID != "b" {
		t.Fatalf("b's first who %+v: want alice, then bob flagged you", vs)
	}
	whoLen("c", c.take(), 3)

	b.busy = true
	p.join("d", "screen", api.PresenceViewer{Name: "dave", Target: api.TargetScreen})
	p.open(ctx, "d", d.send)
	whoLen("d", d.take(), 4)
	a.take()
	c.take()
	p.move("a", 5, 6, false)
	if got := d.take(); len(got) != 1 || *got[0].Peer != (api.PeerPointer{ID: "a", X: 5, Y: 6}) {
		t.Fatalf("d, beside a busy b, was sent %+v: want a's move", got)
	}
	if got := c.take(); len(got) != 0 {
		t.Fatalf("c (another target) was sent %+v", got)
	}
	if got := a.take(); len(got) != 0 {
		t.Fatalf("a was sent its own move: %+v", got)
	}
	b.busy = false
	p.move("a", 0, 0, true)
	if got := b.take(); len(got) != 2 || got[0].Type != api.ControlWho || len(got[0].Viewers) != 4 || *got[1].Peer != (api.PeerPointer{ID: "a", Away: true}) {
		t.Fatalf("b, caught up, was sent %+v: want the who it missed, then a's pointer away", got)
	}
	d.take()

	p.leave("d")
	for name, v := range map[string]*hubViewer{"a": a, "b": b, "c": c} {
		whoLen(name, v.take(), 3)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	p.open(ended, "d", d.send)
	p.move("d", 1, 1, false)
	if _, ok := p.members["d"]; ok || len(b.take()) != 0 {
		t.Fatal("a viewer that ended was made a member again")
	}
}
