package streamsvc

import (
	"net/http"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// mintTicket answers POST /v1/stream/tickets: a ticket for one target's
// stream, view-only or full, for at most MaxTicketTTLSeconds. Only the
// token mints (the route takes no ticket): a ticket cannot make another.
func (s *Service) mintTicket(w http.ResponseWriter, r *http.Request) {
	req, err := httpapi.DecodeBody[api.TicketRequest](r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	res, err := s.ticket(r, req)
	httpapi.Answer(w, res, err)
}

func (s *Service) ticket(r *http.Request, req api.TicketRequest) (api.StreamTicket, error) {
	ttl := req.TTLSeconds
	if ttl == 0 {
		ttl = api.DefaultTicketTTLSeconds
	}
	if ttl < 1 || ttl > api.MaxTicketTTLSeconds {
		return api.StreamTicket{}, api.Errorf(api.KindInvalidArgument, "ttl_seconds %d is out of range 1-%d", req.TTLSeconds, api.MaxTicketTTLSeconds)
	}
	ctx := r.Context()
	feature, offer := api.FeatureDesktopStream, api.PathStreamScreen
	if req.WindowID != 0 {
		feature = api.FeatureWindowStream
		offer = strings.Replace(api.PathStreamWindow, "{id}", itoa(req.WindowID), 1)
	}
	if st := s.host.Feature(ctx, feature); !st.Supported {
		return api.StreamTicket{}, api.CapabilityMissing(feature, st.Limitation)
	}
	var size api.Size
	var ref desktop.WindowRef
	if req.WindowID != 0 {
		win, err := s.d.Window(ctx, req.WindowID)
		if err != nil {
			return api.StreamTicket{}, err
		}
		size = api.Size{Width: win.Bounds.Width, Height: win.Bounds.Height}
		// The ticket names the window as it is now (target.go).
		if ref, err = s.d.WindowRef(ctx, req.WindowID); err != nil {
			return api.StreamTicket{}, err
		}
	} else {
		var err error
		if size, err = s.d.ScreenSize(ctx); err != nil {
			return api.StreamTicket{}, err
		}
	}
	// A principal's ticket names it (a kick of that person ends what the
	// ticket opened), and a viewer's is view-only whatever it asked: the
	// answer's view_only says so, rather than refusing a viewer that
	// forgot to ask.
	caller := server.CallerOf(ctx)
	person, role := server.PersonOf(caller)
	if role == server.RoleViewer {
		req.ViewOnly = true
	}
	expires := time.Now().Add(time.Duration(ttl) * time.Second)
	tk, err := s.host.MintTicket(server.Ticket{Scope: server.TicketScopeStream, Target: targetName(ref), ViewOnly: req.ViewOnly, Expires: expires,
		Person: person, Role: role, PersonName: server.PersonNameOf(caller)})
	if err != nil {
		return api.StreamTicket{}, api.Errorf(api.KindEnv, "mint the ticket: %v", err)
	}
	return api.StreamTicket{Ticket: tk, ExpiresAt: expires.UTC().Truncate(time.Second), WindowID: req.WindowID, ViewOnly: req.ViewOnly,
		OfferPath: offer, Codec: api.StreamCodec, FrameSize: size}, nil
}
