package streamsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

func itoa(id uint32) string { return strconv.FormatUint(uint64(id), 10) }

func (s *Service) offerScreen(w http.ResponseWriter, r *http.Request) { s.offer(w, r, 0) }

func (s *Service) offerWindow(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 0, 32)
	if err != nil || id == 0 {
		httpapi.WriteError(w, api.Errorf(api.KindInvalidArgument, "window id %q is not a window id (a number from GET /v1/windows)", r.PathValue("id")))
		return
	}
	s.offer(w, r, uint32(id))
}

// offer answers a WHEP offer: 201 Created, the whole SDP answer, and the
// Location of the session, which a DELETE ends.
func (s *Service) offer(w http.ResponseWriter, r *http.Request, windowID uint32) {
	caller := server.CallerOf(r.Context())
	tg, err := s.target(r.Context(), windowID, caller.Ticket) // target.go
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	target := tg.name
	// A viewer's stream is view-only however it came: its own offer
	// (token path or not: a principal's bearer is ignored), or a ticket
	// a viewer minted (which says view_only anyway).
	person, role := server.PersonOf(caller)
	viewOnly := caller.Ticket != nil && caller.Ticket.ViewOnly || role == server.RoleViewer
	so, err := api.ParseStreamQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	ice := iceOf(caller)
	if so.ICE == api.ICERelay && len(ice.ICEServers) == 0 {
		httpapi.WriteError(w, errRelayOnlyNoTURN)
		return
	}
	if so.Audio {
		if st := s.audioFeature(r.Context()); !st.Supported {
			httpapi.WriteError(w, api.CapabilityMissing(api.FeatureDesktopAudio, st.Limitation))
			return
		}
	}
	offer, err := io.ReadAll(io.LimitReader(r.Body, rtc.MaxOfferBytes+1))
	if err != nil {
		httpapi.WriteError(w, api.Errorf(api.KindInvalidArgument, "read the offer: %v", err))
		return
	}
	if s.engine == nil { // the feature gate answered already; a guard
		httpapi.WriteError(w, api.CapabilityMissing(api.FeatureDesktopStream, s.limitation))
		return
	}
	release, err := s.admit(caller.Ticket)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	ticketID := ""
	if caller.Ticket != nil {
		ticketID = caller.Ticket.ID
	}
	id := newSessionID()
	name, _ := presenceName(caller)
	sess := &session{target: target, ticket: ticketID, person: person, name: name, role: role, windowID: windowID, viewOnly: viewOnly, started: time.Now()}
	// The viewer outlives this request: its context hangs off the
	// service's, and ends when the token it came with is rotated or the
	// person it came for is kicked (unshared).
	ctx, end := s.host.Hold(s.base, caller)
	ctx = untilGone(ctx, tg) // a window stream ends with its window
	var input rtc.Input
	if !viewOnly {
		input = s.newInput(tg)
	}
	v, answer, err := s.engine.Join(ctx, rtc.Target{Key: target, Open: s.opener(windowID)}, string(offer), rtc.ViewerOptions{
		ViewOnly: viewOnly, MaxFPS: so.MaxFPS, MaxWidth: so.MaxWidth, MaxHeight: so.MaxHeight, Audio: so.Audio, Input: input,
		Control: s.control(id, windowID, caller.Ticket), ConnectTimeout: s.connectTimeout,
		OnPeer:     func(x, y int, away bool) { s.presence.move(id, x, y, away) },
		ICEServers: ice.ICEServers, RelayOnly: so.ICE == api.ICERelay, TURNTLS: ice.tls,
		OnPath: func(p api.StreamPath) { sess.path.Store(&p) },
		OnClose: func(cause error) {
			s.mu.Lock()
			delete(s.sessions, id)
			s.mu.Unlock()
			s.presence.leave(id)
			release()
			if api.KindOf(cause) == api.KindTimeout {
				s.log.Info("stream viewer ended: it never connected", "stream", target, "err", cause)
			}
			if errors.Is(cause, server.ErrKicked) {
				s.log.Info("stream viewer ended: its person was kicked", "stream", target, "person", person)
			}
			if errors.Is(cause, server.ErrTokenRotated) {
				s.log.Info("stream viewer ended: the token was rotated", "stream", target)
			}
			end(cause)
		},
	})
	if err != nil {
		release()
		end(err)
		httpapi.WriteError(w, err)
		return
	}
	s.mu.Lock()
	select {
	case <-v.Done(): // ended already (OnClose ran)
	default:
		sess.viewer = v
		s.sessions[id] = sess
		// Under s.mu: OnClose's leave cannot come before this join.
		s.presence.join(id, target, api.PresenceViewer{Name: name, Role: string(role), Target: api.StreamTarget(windowID), ViewOnly: viewOnly})
	}
	s.mu.Unlock()
	w.Header().Set("Location", strings.Replace(api.PathStreamSession, "{id}", id, 1))
	w.Header().Set("Content-Type", api.ContentTypeSDP)
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answer)
}

// admit takes a viewer's slot for a ticket's offer: at most
// api.MaxStreamViewersPerTicket for the ticket and its renewals, and none
// of the TokenReservedViewers kept for the token. The token's offers take
// any slot (the engine bounds them all, rtc.MaxViewers). release gives
// the slot back, once, when the viewer ends or never joins.
func (s *Service) admit(t *server.Ticket) (release func(), err error) {
	if t == nil {
		return func() {}, nil
	}
	id := t.ID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perTicket[id] >= api.MaxStreamViewersPerTicket {
		return nil, api.Errorf(api.KindLimitExceeded, "this ticket has %d viewers open, the most one ticket (with its renewals) opens at once", api.MaxStreamViewersPerTicket).
			WithHint("close a viewer of this ticket (DELETE its session), or mint another ticket")
	}
	if most := rtc.MaxViewers - TokenReservedViewers; s.ticketViewers >= most {
		return nil, api.Errorf(api.KindLimitExceeded, "%d viewers opened with tickets are watching, the most tickets may open (the daemon's last %d of %d slots are kept for its token)",
			most, TokenReservedViewers, rtc.MaxViewers).WithHint("wait for a viewer to leave, then retry")
	}
	s.perTicket[id]++
	s.ticketViewers++
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ticketViewers--
		if s.perTicket[id]--; s.perTicket[id] == 0 {
			delete(s.perTicket, id)
		}
	}), nil
}

// opener makes the capture source of a target when its first viewer joins.
func (s *Service) opener(windowID uint32) func() (rtc.Source, error) {
	return func() (rtc.Source, error) {
		return &capSource{c: s.d.NewCapturer(windowID), d: s.d, windowID: windowID, captures: s.captures}, nil
	}
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// capSource is a desktop Capturer as a stream's source, counting captures
// (the metric that shows nothing is captured once nobody watches).
type capSource struct {
	c        *desktop.Capturer
	d        *desktop.Desktop
	windowID uint32
	captures server.Counter
}

// SizeHint is the target's size now (rtc.SizeHinter): the screen's, or
// the window's.
func (c *capSource) SizeHint(ctx context.Context) (int, int, error) {
	if c.windowID == 0 {
		s, err := c.d.ScreenSize(ctx)
		return s.Width, s.Height, err
	}
	w, err := c.d.Window(ctx, c.windowID)
	return w.Bounds.Width, w.Bounds.Height, err
}

func (c *capSource) Next(ctx context.Context) (rtc.Frame, error) {
	f, err := c.c.Next(ctx)
	if err != nil {
		return rtc.Frame{}, err
	}
	c.captures.Add(1)
	return rtc.Frame{Pix: f.Pix, Stride: f.Stride, Width: f.Width, Height: f.Height, Damage: f.Damage, Full: f.Full}, nil
}

func (c *capSource) RequestFull() { c.c.RequestFull() }
func (c *capSource) Close()       { c.c.Close() }
