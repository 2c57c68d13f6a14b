package api

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"time"
)

// Routes of desktop_stream and window_stream. The two offer routes speak
// WHEP (RFC 9725): a POST of an application/sdp offer is answered 201
// Created with the whole SDP answer (no trickle) and a Location, under
// PathStreamSession, that a DELETE ends.
const (
	PathStreamTickets = "/v1/stream/tickets"
	PathStreamScreen  = "/v1/stream/screen"
	PathStreamWindow  = "/v1/stream/windows/{id}"
	PathStreamSession = "/v1/stream/sessions/{id}"
	// PathStreamSessions lists the live viewers (StreamSessions), to the
	// token only: a ticket learns nothing of other viewers.
	PathStreamSessions = "/v1/stream/sessions"
	// PathStreamICE answers the ICE servers (StreamICE) a viewer's peer
	// connection should use, to the token or a stream ticket: none on a
	// Space reached on its own port; through cua-relay, the relay adds
	// its TURN server with a credential minted for this one view.
	PathStreamICE = "/v1/stream/ice"
	// PathViewer is where the built-in viewer page is served (static
	// files, no token), opened as PathViewer + "#ticket=...&offer=...": a
	// fragment never reaches a server or its logs.
	PathViewer = "/viewer/"
)

// ViewerFragment is the fragment of a viewer link to the offer URL with
// the ticket, PathViewer + "#" + ViewerFragment(...), as the page reads it
// (media/viewer/static/link.js).
func ViewerFragment(ticket, offerURL string) string {
	return url.Values{"ticket": {ticket}, "offer": {offerURL}}.Encode()
}

// ContentTypeSDP is the body type of WHEP offers and answers.
const ContentTypeSDP = "application/sdp"

// Stream tickets: the TTL a ticket gets when none is asked for, and the
// longest one may live. A ticket opens streams; a stream it opened lives
// on past its expiry, until its viewer leaves or the token rotates.
const (
	DefaultTicketTTLSeconds = 60
	MaxTicketTTLSeconds     = 3600
)

// TicketPrefix starts every stream ticket ("cuat1.<payload>.<mac>"), so
// that a bearer value is told from a token without trying a signature (and
// a format change is a new prefix). cua-relay forwards a request whose
// bearer has it only on the stream routes a viewer link uses, and leaves
// the ticket itself to the Space.
const TicketPrefix = "cuat1."

// Ticket renewal: a viewer that opened its stream with a ticket is sent a
// fresh ticket of the same target and mode (a control message "ticket")
// when its control channel opens and every TicketRenewalInterval after,
// each valid for TicketRenewalTTL (or as long as the ticket it came with,
// if that is longer). A viewer that loses its connection (a network drop,
// a restart of the daemon) reconnects with it while it is valid; one that
// closed stops being renewed, and its last renewal dies soon after.
const (
	TicketRenewalTTL      = 5 * time.Minute
	TicketRenewalInterval = time.Minute
)

// Stream slots a view link cannot hoard: at most MaxStreamViewersPerTicket
// viewers at once are opened with one ticket and its renewals, and a
// viewer whose peer connection (ICE and DTLS) has not connected within
// StreamConnectTimeout of its answer is ended, freeing its slot; an
// offer posted and left would otherwise hold it until ICE gives up.
const (
	MaxStreamViewersPerTicket = 4
	StreamConnectTimeout      = 10 * time.Second
)

// Stream frame rates: the default and the highest a viewer may ask for
// with ?max_fps=.
const (
	DefaultStreamFPS = 30
	MaxStreamFPS     = 60
)

// Stream frame sizes a viewer may ask for with ?max_width= and
// ?max_height=: a bound under MinStreamDimension makes a frame no one can
// read (and VP8 codes 16x16 blocks), and VP8's header holds 14 bits of
// each side.
const (
	MinStreamDimension = 16
	MaxStreamDimension = 16383
)

// The query parameters of a WHEP offer.
const (
	QueryMaxFPS    = "max_fps"
	QueryMaxWidth  = "max_width"
	QueryMaxHeight = "max_height"
	// QueryICE is the candidates the Space gathers for the viewer:
	// ICEAll (the default: direct first, TURN as the fallback) or
	// ICERelay (TURN only, never the Space's own addresses).
	QueryICE = "ice"
	// QueryAudio=1 adds the desktop's sound (FeatureDesktopAudio) to the
	// stream, on an audio track the offer must receive (Opus); 0 is the
	// default, video alone.
	QueryAudio = "audio"
)

// The values of QueryICE.
const (
	ICEAll   = "all"
	ICERelay = "relay"
)

// ICEServer is one STUN or TURN server of a peer connection, spelled as
// WebRTC's RTCIceServer (so a page passes it to RTCPeerConnection as is).
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}

// StreamICE is the answer of GET PathStreamICE.
type StreamICE struct {
	ICEServers []ICEServer `json:"ice_servers"`
}

// The paths a stream's media takes (ViewerControl type "path", and the
// route of a StreamEndpoint).
const (
	// MediaDirect: ICE found a way between the viewer and the Space.
	MediaDirect = "direct"
	// MediaTURN: the media is relayed by a TURN server (cua-relay's).
	MediaTURN = "turn"
)

// The routes a stream's signalling takes (StreamEndpoint.Route).
const (
	// RouteDirect: the offer goes to the Space's own address.
	RouteDirect = "direct"
	// RouteRelay: the offer and the viewer page go through cua-relay's
	// HTTPS, under /c/<computer>/; the media goes direct when ICE finds a
	// way, else through the relay's TURN.
	RouteRelay = "relay"
)

// StreamOptions are what a viewer asks of a stream in its offer's query:
// ?max_fps=&max_width=&max_height=&ice=&audio=. A zero field is the
// default: 30 fps, no bound on a side, every candidate (ICEAll), no sound.
type StreamOptions struct {
	MaxFPS    int
	MaxWidth  int
	MaxHeight int
	// ICE is ICEAll ("" too) or ICERelay.
	ICE string
	// Audio asks for the desktop's sound too.
	Audio bool
}

// ParseStreamQuery reads the options of an offer's query. Parameters it
// does not name are left to others (WHEP clients may add their own); a
// value that is not an integer in its range, or is given twice, is
// invalid_argument. Defaults are left zero.
func ParseStreamQuery(q url.Values) (StreamOptions, error) {
	var o StreamOptions
	for _, p := range []struct {
		name   string
		lo, hi int
		to     *int
	}{
		{QueryMaxFPS, 1, MaxStreamFPS, &o.MaxFPS},
		{QueryMaxWidth, MinStreamDimension, MaxStreamDimension, &o.MaxWidth},
		{QueryMaxHeight, MinStreamDimension, MaxStreamDimension, &o.MaxHeight},
	} {
		vs, ok := q[p.name]
		if !ok {
			continue
		}
		if len(vs) != 1 {
			return StreamOptions{}, Errorf(KindInvalidArgument, "query parameter %s is given %d times: give it once", p.name, len(vs))
		}
		v, err := strconv.Atoi(vs[0])
		if err != nil || v < p.lo || v > p.hi {
			return StreamOptions{}, Errorf(KindInvalidArgument, "query parameter %s=%.32q must be an integer from %d to %d", p.name, vs[0], p.lo, p.hi)
		}
		*p.to = v
	}
	if vs, ok := q[QueryICE]; ok {
		if len(vs) != 1 || (vs[0] != ICEAll && vs[0] != ICERelay) {
			return StreamOptions{}, Errorf(KindInvalidArgument, "query parameter %s=%.32q: want %s or %s, once", QueryICE, vs, ICEAll, ICERelay)
		}
		if vs[0] == ICERelay {
			o.ICE = ICERelay
		}
	}
	if vs, ok := q[QueryAudio]; ok {
		if len(vs) != 1 || (vs[0] != "0" && vs[0] != "1") {
			return StreamOptions{}, Errorf(KindInvalidArgument, "query parameter %s=%.32q: want 1 (sound) or 0, once", QueryAudio, vs)
		}
		o.Audio = vs[0] == "1"
	}
	return o, nil
}

// Query is the offer query that asks for o ("" for the defaults), which
// ParseStreamQuery reads back as o.
func (o StreamOptions) Query() string {
	q := url.Values{}
	for _, p := range []struct {
		name string
		v    int
	}{{QueryMaxFPS, o.MaxFPS}, {QueryMaxWidth, o.MaxWidth}, {QueryMaxHeight, o.MaxHeight}} {
		if p.v != 0 {
			q.Set(p.name, strconv.Itoa(p.v))
		}
	}
	if o.ICE == ICERelay {
		q.Set(QueryICE, ICERelay)
	}
	if o.Audio {
		q.Set(QueryAudio, "1")
	}
	return q.Encode()
}

// StreamScale is the scale of the frames of a w x h target for a viewer
// that asked for at most maxWidth x maxHeight (0: no bound on that side):
// num frame pixels per den target pixels on both axes, in lowest terms.
// The aspect ratio is kept, the tighter bound decides, and a stream is
// never scaled up: 1/1 when the target fits. The frame is StreamFrameSize.
//
// The coordinate rule is a scaled screenshot's: frame pixel x covers
// target pixels [x*den/num, (x+1)*den/num), and input at frame point x
// lands on target pixel floor((x+0.5)*den/num).
func StreamScale(w, h, maxWidth, maxHeight int) (num, den int) {
	fitsW := maxWidth <= 0 || w <= maxWidth
	fitsH := maxHeight <= 0 || h <= maxHeight
	switch {
	case fitsW && fitsH || w <= 0 || h <= 0:
		return 1, 1
	case fitsH || !fitsW && int64(maxWidth)*int64(h) <= int64(maxHeight)*int64(w):
		num, den = maxWidth, w // the width binds
	default:
		num, den = maxHeight, h
	}
	a, b := num, den
	for b != 0 {
		a, b = b, a%b
	}
	return num / a, den / a
}

// StreamFrameSize is the size of the frames StreamScale gives: each side
// times num/den rounded down (every frame pixel then covers target pixels
// only), at least 1.
func StreamFrameSize(w, h, maxWidth, maxHeight int) Size {
	num, den := StreamScale(w, h, maxWidth, maxHeight)
	side := func(v int) int { return int(max(1, int64(v)*int64(num)/int64(den))) }
	return Size{Width: side(w), Height: side(h)}
}

// StreamCodec is the only video codec of the streams.
const StreamCodec = "vp8"

// The data channels a viewer may open (by label), as RFC 8831 channels
// in its offer:
//   - input: reliable and ordered; keys, buttons, text, scroll.
//   - pointer: unordered without retransmits (maxRetransmits 0); motion,
//     where only the latest position matters.
//   - control: keyframe requests and ping/pong for the round-trip time;
//     the daemon tells the viewer of size changes, the pointer and
//     renewals of its ticket here. Reliable and ordered (the cursor shapes
//     a viewer keeps depend on it).
//
// A view-only viewer's input and pointer channels are closed by the daemon
// as soon as they open.
const (
	ChannelInput   = "input"
	ChannelPointer = "pointer"
	ChannelControl = "control"
)

// MaxStreamMessageBytes bounds one data channel message from a viewer.
const MaxStreamMessageBytes = 64 << 10

// TicketRequest is the body of POST /v1/stream/tickets (token only).
type TicketRequest struct {
	// WindowID scopes the ticket to one window's stream; 0 = the screen's.
	WindowID uint32 `json:"window_id,omitempty"`
	// ViewOnly tickets open streams without the input channels.
	ViewOnly bool `json:"view_only,omitempty"`
	// TTLSeconds is how long the ticket opens streams; 0 = 60 s.
	TTLSeconds int `json:"ttl_seconds,omitempty"`
}

// StreamTicket is the answer of POST /v1/stream/tickets: a ticket for
// Authorization: Bearer on the offer and session routes, and where to
// send the offer.
type StreamTicket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
	WindowID  uint32    `json:"window_id,omitempty"`
	ViewOnly  bool      `json:"view_only"`
	// OfferPath is the WHEP route of the target (PathStreamScreen or the
	// window's PathStreamWindow).
	OfferPath string `json:"offer_path"`
	Codec     string `json:"codec"`
	// FrameSize is the target's size now, the size of the stream's frames.
	FrameSize Size `json:"frame_size"`
}

// Size is a width and height in pixels.
type Size struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Input message types (channel input and pointer).
const (
	InputMove   = "move"
	InputButton = "button"
	InputKey    = "key"
	InputText   = "text"
	InputScroll = "scroll"
)

// Actions of button and key messages: down and up hold and let go (a drag,
// a held modifier); click and press do both at once.
const (
	ActionDown  = "down"
	ActionUp    = "up"
	ActionClick = "click"
	ActionPress = "press"
)

// ViewerInput is one message of the input or pointer channel, as JSON:
//
//	{"type":"move","x":10,"y":20}
//	{"type":"button","x":10,"y":20,"button":"left","action":"click","count":2}
//	{"type":"key","key":"ctrl+c","action":"press"}
//	{"type":"text","text":"héllo"}
//	{"type":"scroll","x":10,"y":20,"dy":3}
//
// x and y are pixels of the stream's frames: the screen's, or for a window
// stream the window's own (its top-left is 0, 0).
type ViewerInput struct {
	Type   string  `json:"type"`
	X      float64 `json:"x,omitempty"`
	Y      float64 `json:"y,omitempty"`
	Button string  `json:"button,omitempty"`
	Action string  `json:"action,omitempty"`
	Count  int     `json:"count,omitempty"`
	Key    string  `json:"key,omitempty"`
	Text   string  `json:"text,omitempty"`
	DX     int     `json:"dx,omitempty"`
	DY     int     `json:"dy,omitempty"`
}

// Control message types (channel control). A viewer sends keyframe and
// ping; the daemon answers pong (echoing id and t, adding its own clock)
// and sends size when the stream's frame size changes, cursor when the
// pointer moves or changes shape, ticket to renew a viewer's ticket, path
// once the connection is up (and again when ICE picks another pair), and
// error when a message of the viewer failed.
//
// Presence (every role, view-only too: it is not input): a viewer sends
// peer with Peer{x, y} where its own pointer is over the video, in its
// frame's pixels, or Peer{away: true} once the pointer left the video.
// The daemon sends who (Viewers: everyone watching the Space, the
// receiver flagged you) when the viewer's control channel opens and
// whenever someone joins or leaves, and peer (Peer{id, x, y} or
// Peer{id, away}) when another viewer of the same target moves, in the
// receiver's frame pixels. A viewer's peer messages beyond
// MaxPeerPerSecond are dropped.
const (
	ControlKeyframe = "keyframe"
	ControlPing     = "ping"
	ControlPong     = "pong"
	ControlSize     = "size"
	ControlCursor   = "cursor"
	ControlTicket   = "ticket"
	ControlPath     = "path"
	ControlError    = "error"
	ControlWho      = "who"
	ControlPeer     = "peer"
)

// MaxPeerPerSecond bounds the peer (pointer presence) messages a viewer's
// moves are relayed at; a page sends at most one per animation frame.
const MaxPeerPerSecond = 30

// PresenceViewer is one person watching a Space, as the who message and
// StreamSession list them.
type PresenceViewer struct {
	// ID is the viewer's session id (StreamSession.ID): Peer.ID names it.
	ID string `json:"id"`
	// Name is who watches: the person the viewer's grant or ticket names
	// (a relay user), or "owner" for a viewer on the Space's own token.
	Name string `json:"name"`
	// Role is owner, editor, viewer (a shared person's), or "" on the
	// Space's own token.
	Role     string `json:"role,omitempty"`
	Target   string `json:"target"`
	ViewOnly bool   `json:"view_only"`
	// You marks the receiving viewer itself.
	You bool `json:"you,omitempty"`
}

// PresenceOwnerName is PresenceViewer.Name for a viewer on the Space's
// own token (or a ticket it minted), which names no person.
const PresenceOwnerName = "owner"

// PeerPointer is a viewer's pointer over the video (type peer).
type PeerPointer struct {
	// ID is the moving viewer's (absent in what a viewer sends).
	ID   string `json:"id,omitempty"`
	X    int    `json:"x"`
	Y    int    `json:"y"`
	Away bool   `json:"away,omitempty"`
}

// ViewerControl is one message of the control channel (and the error
// answer of the input channels).
type ViewerControl struct {
	Type string `json:"type"`
	// ID and T are the viewer's ping id and clock (ms), echoed in the pong.
	ID int64   `json:"id,omitempty"`
	T  float64 `json:"t,omitempty"`
	// ServerMS is the daemon's clock (Unix ms) when it answered.
	ServerMS int64 `json:"server_ms,omitempty"`
	Width    int   `json:"width,omitempty"`
	Height   int   `json:"height,omitempty"`
	// Cursor is the pointer (type cursor).
	Cursor *ViewerCursor `json:"cursor,omitempty"`
	// Ticket is a renewal of the viewer's ticket, valid until ExpiresAt
	// (type ticket; see TicketRenewalTTL).
	Ticket    string     `json:"ticket,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Error     *Error     `json:"error,omitempty"`
	// Path is the way the media took once connected (type path).
	Path *StreamPath `json:"path,omitempty"`
	// Viewers is everyone watching the Space (type who).
	Viewers []PresenceViewer `json:"viewers,omitempty"`
	// Peer is a viewer's pointer (type peer).
	Peer *PeerPointer `json:"peer,omitempty"`
}

// StreamPath is the candidate pair ICE chose for a viewer: Media is
// MediaTURN when either end's candidate is relayed, else MediaDirect;
// Local and Remote are the candidate types (host, srflx, prflx, relay),
// the Space's and the viewer's; Protocol is udp or tcp.
type StreamPath struct {
	Media    string `json:"media"`
	Local    string `json:"local"`
	Remote   string `json:"remote"`
	Protocol string `json:"protocol"`
}

// ViewerCursor is the pointer as the viewer draws it over the video: the
// stream's frames hold no cursor.
type ViewerCursor struct {
	// X and Y are the pointer's position in the stream's pixels (a
	// window stream's own; the pointer may be outside the window).
	X int `json:"x"`
	Y int `json:"y"`
	// Serial names the shape. A viewer keeps the last MaxCursorShapes
	// shapes it was sent, by serial, in the order they came; the daemon
	// sends a shape only with a serial the viewer does not keep.
	Serial uint32       `json:"serial"`
	Shape  *CursorShape `json:"shape,omitempty"`
}

// CursorShape is a cursor's image: its pixel (HotX, HotY) is where the
// pointer is.
type CursorShape struct {
	Width  int `json:"width"`
	Height int `json:"height"`
	HotX   int `json:"hot_x"`
	HotY   int `json:"hot_y"`
	// PNG is the image (base64 in JSON). It is absent for a cursor too
	// large to send, which a viewer draws as an ordinary arrow.
	PNG []byte `json:"png,omitempty"`
}

// MaxCursorShapes is how many cursor shapes a viewer keeps (see
// ViewerCursor.Serial); MaxCursorPNGBytes bounds one shape's image, so
// that its message stays within what every WebRTC stack sends whole.
const (
	MaxCursorShapes   = 32
	MaxCursorPNGBytes = 40 << 10
)

// maxCoordinate bounds x and y: X11 coordinates are 16-bit.
const maxCoordinate = 1 << 15

// ParseViewerInput reads and checks one input or pointer message. Text and
// keys are checked further where they are typed (desktop's limits).
func ParseViewerInput(b []byte) (ViewerInput, error) {
	var m ViewerInput
	if err := decodeMessage(b, &m); err != nil {
		return m, err
	}
	coords := func() error {
		if math.IsNaN(m.X) || math.IsNaN(m.Y) || math.Abs(m.X) > maxCoordinate || math.Abs(m.Y) > maxCoordinate {
			return Errorf(KindInvalidArgument, "%s message: x and y must be numbers within ±%d", m.Type, maxCoordinate)
		}
		return nil
	}
	switch m.Type {
	case InputMove:
		return m, coords()
	case InputButton:
		switch m.Button {
		case "", ButtonLeft, ButtonMiddle, ButtonRight:
		default:
			return m, Errorf(KindInvalidArgument, "button message: button %q: want left, middle or right", m.Button)
		}
		switch m.Action {
		case ActionDown, ActionUp, ActionClick:
		case "":
			m.Action = ActionClick
		default:
			return m, Errorf(KindInvalidArgument, "button message: action %q: want down, up or click", m.Action)
		}
		if m.Count < 0 {
			return m, Errorf(KindInvalidArgument, "button message: count %d is negative", m.Count)
		}
		return m, coords()
	case InputKey:
		if m.Key == "" {
			return m, Errorf(KindInvalidArgument, "key message: key is empty")
		}
		switch m.Action {
		case ActionDown, ActionUp, ActionPress:
		case "":
			m.Action = ActionPress
		default:
			return m, Errorf(KindInvalidArgument, "key message: action %q: want down, up or press", m.Action)
		}
		return m, nil
	case InputText:
		if m.Text == "" {
			return m, Errorf(KindInvalidArgument, "text message: text is empty")
		}
		return m, nil
	case InputScroll:
		return m, coords()
	}
	return m, Errorf(KindInvalidArgument, "input message of type %q: want move, button, key, text or scroll", m.Type)
}

// ParseViewerControl reads and checks one control message of a viewer.
func ParseViewerControl(b []byte) (ViewerControl, error) {
	var m ViewerControl
	if err := decodeMessage(b, &m); err != nil {
		return m, err
	}
	switch m.Type {
	case ControlKeyframe, ControlPing:
		return m, nil
	case ControlPeer:
		return m, checkPeer(&m)
	}
	return m, Errorf(KindInvalidArgument, "control message of type %q: want keyframe, ping or peer", m.Type)
}

// checkPeer checks a viewer's peer message. The id is the daemon's to
// set (a viewer cannot speak for another), and an away pointer has no
// place: both are cleared rather than refused.
func checkPeer(m *ViewerControl) error {
	if m.Peer == nil {
		return Errorf(KindInvalidArgument, "peer message: peer is missing: send {\"x\":..,\"y\":..} or {\"away\":true}")
	}
	p := *m.Peer
	p.ID = ""
	if p.Away {
		p.X, p.Y = 0, 0
	} else if p.X < -maxCoordinate || p.X > maxCoordinate || p.Y < -maxCoordinate || p.Y > maxCoordinate {
		return Errorf(KindInvalidArgument, "peer message: x and y must be within ±%d", maxCoordinate)
	}
	m.Peer = &p
	return nil
}

// decodeMessage decodes one JSON object, refusing what is too long, not
// one object, or has fields the contract does not name (a typo would
// otherwise pass as a default).
func decodeMessage(b []byte, v any) error {
	if len(b) > MaxStreamMessageBytes {
		return Errorf(KindInvalidArgument, "message of %d bytes is over the limit of %d", len(b), MaxStreamMessageBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(KindInvalidArgument, "message is not a valid JSON object of the contract: %v", err)
	}
	if dec.More() {
		return Errorf(KindInvalidArgument, "message holds more than one JSON value")
	}
	return nil
}

// StreamEndpoint is what a viewer needs to watch a stream: the page to
// open, or the WHEP URL to offer to with the ticket as its bearer (the
// answer of the bridge's stream_endpoint tool and of cua-bridge view).
type StreamEndpoint struct {
	// ViewerURL opens the built-in viewer page (issue 8) with the ticket
	// in the URL's fragment, which no server or proxy logs.
	ViewerURL string `json:"viewer_url"`
	// OfferURL is the absolute WHEP URL of the target.
	OfferURL        string    `json:"offer_url"`
	Ticket          string    `json:"ticket"`
	TicketExpiresAt time.Time `json:"ticket_expires_at"`
	Codec           string    `json:"codec"`
	FrameSize       Size      `json:"frame_size"`
	WindowID        uint32    `json:"window_id,omitempty"`
	ViewOnly        bool      `json:"view_only"`
	// Route is how the offer and the page reach the Space: RouteDirect
	// or RouteRelay. The media's own path is known once a viewer
	// connected: its page's state overlay says it (MediaDirect or
	// MediaTURN), as the control channel's "path" message does.
	Route string `json:"route"`
	// ICEURL is where a WHEP client gets the ICE servers to use
	// (GET with the ticket as its bearer; PathStreamICE).
	ICEURL string `json:"ice_url"`
	// Viewers are the live viewers of the same target when the endpoint
	// was made, each with its media's path once connected: what an agent
	// reads to learn whether the streams went direct or through TURN.
	// Empty when none, or when the daemon cannot list them (an older one).
	Viewers []StreamSession `json:"viewers,omitempty"`
}
