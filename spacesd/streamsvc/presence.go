package streamsvc

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// presence is who watches the Space: every viewer's session, with the
// person behind it, and the control channel it is told of the others on
// (api.ControlWho when someone joins or leaves, api.ControlPeer when a
// viewer of the same target moves its pointer over the video).
//
// Sends happen under mu: they never block (a control channel's send
// answers rtc.ErrControlBusy rather than wait), and holding mu keeps
// every viewer's who messages in the order the changes happened.
type presence struct {
	mu      sync.Mutex
	members map[string]*member
}

// member is one viewer's session in presence.
type member struct {
	info api.PresenceViewer
	// key is the session's target as the service keys it (a window's
	// name holds its instance): peers move among viewers of one key.
	key    string
	joined time.Time
	// listed is set once the session is live (join): only then do the
	// others see it.
	listed bool
	// send is the viewer's control channel (nil until it opened).
	send func(api.ViewerControl) error
	// stale is set when the last who did not fit the viewer's busy
	// channel: it is sent again before the next peer that fits.
	stale bool
}

func newPresence() *presence { return &presence{members: map[string]*member{}} }

// presenceName is how a session's caller is shown: its person's name,
// else its person's id, else api.PresenceOwnerName (the Space's token, or
// a ticket it minted, names no one).
func presenceName(c server.Caller) (name string, role server.Role) {
	person, role := server.PersonOf(c)
	if person == "" {
		return api.PresenceOwnerName, role
	}
	return cmp.Or(server.PersonNameOf(c), person), role
}

// member answers the member of id, made when absent. The caller holds p.mu.
func (p *presence) member(id string) *member {
	m := p.members[id]
	if m == nil {
		m = &member{}
		p.members[id] = m
	}
	return m
}

// join lists a live session and tells everyone.
func (p *presence) join(id, key string, info api.PresenceViewer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.member(id)
	info.ID = id
	m.info, m.key, m.joined, m.listed = info, key, time.Now(), true
	p.broadcastWho()
}

// leave forgets a session and tells the others.
func (p *presence) leave(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.members[id]
	if !ok {
		return
	}
	delete(p.members, id)
	if m.listed {
		p.broadcastWho()
	}
}

// open takes a viewer's control channel (rtc.ViewerOptions.Control's
// send) and tells it who is there. A viewer that ended already (ctx) is
// not made a member again after its leave.
func (p *presence) open(ctx context.Context, id string, send func(api.ViewerControl) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	m := p.member(id)
	m.send = send
	if m.listed {
		p.sendWho(id, m)
	}
}

// move tells the other viewers of id's target where its pointer is (x
// and y in the target's pixels; each viewer's send converts them to its
// frame's). A viewer behind on its channel skips the move: a later one
// supersedes it.
func (p *presence) move(id string, x, y int, away bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from, ok := p.members[id]
	if !ok || !from.listed {
		return
	}
	msg := api.PeerPointer{ID: id, X: x, Y: y, Away: away}
	for oid, m := range p.members {
		if oid == id || !m.listed || m.send == nil || m.key != from.key {
			continue
		}
		if m.stale {
			p.sendWho(oid, m)
			if m.stale {
				continue
			}
		}
		mm := msg // each send converts its own copy
		_ = m.send(api.ViewerControl{Type: api.ControlPeer, Peer: &mm})
	}
}

// viewers answers the listed sessions, in the order they joined. The
// caller holds p.mu.
func (p *presence) viewers() []api.PresenceViewer {
	type listed struct {
		at   time.Time
		info api.PresenceViewer
	}
	all := make([]listed, 0, len(p.members))
	for _, m := range p.members {
		if m.listed {
			all = append(all, listed{m.joined, m.info})
		}
	}
	slices.SortFunc(all, func(a, b listed) int {
		return cmp.Or(a.at.Compare(b.at), strings.Compare(a.info.ID, b.info.ID))
	})
	out := make([]api.PresenceViewer, len(all))
	for i, l := range all {
		out[i] = l.info
	}
	return out
}

// broadcastWho sends who to every listed viewer whose channel is open.
// The caller holds p.mu.
func (p *presence) broadcastWho() {
	for id, m := range p.members {
		if m.listed && m.send != nil {
			p.sendWho(id, m)
		}
	}
}

// sendWho sends m the list, itself flagged. A who refused for a busy
// channel is sent again later (stale). The caller holds p.mu.
func (p *presence) sendWho(id string, m *member) {
	vs := p.viewers()
	for i := range vs {
		vs[i].You = vs[i].ID == id
	}
	err := m.send(api.ViewerControl{Type: api.ControlWho, Viewers: vs})
	m.stale = errors.Is(err, rtc.ErrControlBusy)
	if err != nil && !m.stale {
		m.send = nil // closed: the viewer is leaving
	}
}
