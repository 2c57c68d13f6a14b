// Package streamsvc is the stream service of cua-spacesd: desktop_stream
// and window_stream over WebRTC, signalled by WHEP (RFC 9725), opened with
// the token or a media ticket. The pipelines and peer connections are
// media/rtc's; the pixels and input are capabilities/desktop's. One file
// per operation: tickets, offers (WHEP), sessions, input.
package streamsvc

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/media/viewer"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// DefaultMediaPort is the UDP port of the media (every viewer's ICE), the
// same number as the HTTP port: one number to open in a firewall.
const DefaultMediaPort = api.DefaultPort

// Options say where the media travels.
type Options struct {
	// UDPAddr is the one UDP address every viewer's ICE uses
	// ("127.0.0.1:0" picks a free port, for tests).
	UDPAddr string
	// UDPFallbacks are tried in order when UDPAddr cannot be bound: given
	// when UDPAddr is a default, not asked for, so that a second daemon on
	// the machine still streams. The one used is logged, and why.
	UDPFallbacks []string
	// ICETCPAddr, when set, also serves ICE over TCP there, for viewers
	// whose UDP is blocked.
	ICETCPAddr string
	// NAT1To1IPs are the public addresses of a guest behind a 1:1 NAT.
	NAT1To1IPs []string
	// ConnectTimeout ends a viewer that has not connected that long
	// after its answer (0: api.StreamConnectTimeout); tests shorten it.
	ConnectTimeout time.Duration
	// Audio says where the desktop's sound comes from (desktop_audio):
	// the guest's sound server, found as its clients find it unless set.
	Audio audio.Options
}

// TokenReservedViewers of the daemon's rtc.MaxViewers are kept for the
// token: viewers opened with tickets take the others, so that a view
// link, whoever holds it, never locks the token's holder out.
const TokenReservedViewers = 1

// Metrics of the stream service.
const (
	MetricCaptures = "cua_spacesd_stream_captures_total"
	// MetricStreams counts the pipelines (one encoder each): one per
	// target and frame size watched; MetricSources the targets captured,
	// one capture each whatever the sizes.
	MetricStreams = "cua_spacesd_streams"
	MetricSources = "cua_spacesd_stream_sources"
	MetricViewers = "cua_spacesd_stream_viewers"
	// MetricViewersTURN are the connected viewers whose media a TURN
	// server (cua-relay's) relays: the others went direct.
	MetricViewersTURN = "cua_spacesd_stream_viewers_turn"
	// Frames sent, keyframes among them, their bytes, and the encoder's
	// time on them (seconds).
	MetricFrames       = "cua_spacesd_stream_frames_total"
	MetricKeyframes    = "cua_spacesd_stream_keyframes_total"
	MetricFrameBytes   = "cua_spacesd_stream_frame_bytes_total"
	MetricEncodeMicros = "cua_spacesd_stream_encode_microseconds_total"
	// MetricKeyframeEncodeMicros is the encoder's time on keyframes alone.
	MetricKeyframeEncodeMicros = "cua_spacesd_stream_keyframe_encode_microseconds_total"
	// The sound (desktop_audio): its listeners (one capture and encoder
	// while there is any), the 20 ms frames captured, the packets sent
	// of them (DTX leaves silence unsent), their bytes and the encoder's
	// time.
	MetricAudioListeners    = "cua_spacesd_stream_audio_listeners"
	MetricAudioFrames       = "cua_spacesd_stream_audio_frames_total"
	MetricAudioPackets      = "cua_spacesd_stream_audio_packets_total"
	MetricAudioBytes        = "cua_spacesd_stream_audio_bytes_total"
	MetricAudioEncodeMicros = "cua_spacesd_stream_audio_encode_microseconds_total"
)

// Service serves desktop_stream and window_stream.
type Service struct {
	host     server.Host
	d        *desktop.Desktop
	log      *slog.Logger
	engine   *rtc.Engine // nil when the media cannot run (see limitation)
	page     *viewer.Handler
	conns    []interface{ Close() error }
	captures server.Counter
	// limitation says why the streams cannot run ("" when they can).
	limitation string
	audio      audio.Options

	base context.Context // ends at Close: every viewer's sessions hang off it
	stop context.CancelFunc

	connectTimeout time.Duration

	mu       sync.Mutex
	sessions map[string]*session
	// ticketViewers counts the viewers opened (or opening) with a
	// ticket, perTicket the same by ticket ID (see admit).
	ticketViewers int
	perTicket     map[string]int

	// presence is who watches, told to every viewer (presence.go).
	presence *presence
}

type session struct {
	viewer *rtc.Viewer
	target string
	// ticket is the ID of the ticket that opened the session ("": the
	// token): only it (or a renewal of it) or the token ends the session.
	ticket string
	// person is who opened it through the relay (server.PersonOf): a
	// viewer principal ends only its own sessions.
	person string
	// name and role say who watches (presenceName), as the session list
	// and the viewers' who messages show it.
	name     string
	role     server.Role
	windowID uint32
	viewOnly bool
	started  time.Time
	// path is the media's latest path (rtc.ViewerOptions.OnPath), nil
	// until connected. Set from pion's callbacks, which may run before the
	// session is in the map: an atomic of its own, not s.mu.
	path atomic.Pointer[api.StreamPath]
}

// New returns the stream service over d (which the desktop service owns).
// A build without the encoder, or a UDP address that cannot be bound,
// leaves the daemon running with both features unsupported, saying why.
func New(d *desktop.Desktop, o Options) server.NewService {
	return func(h server.Host) (server.Service, error) {
		s := &Service{host: h, d: d, log: h.Log.With("service", "stream"), sessions: map[string]*session{},
			perTicket: map[string]int{}, presence: newPresence(), captures: h.Metrics.Counter(MetricCaptures), page: viewer.New(),
			connectTimeout: cmp.Or(o.ConnectTimeout, api.StreamConnectTimeout), audio: o.Audio}
		if s.audio.Logger == nil {
			s.audio.Logger = s.log
		}
		s.base, s.stop = context.WithCancel(context.Background())
		h.Metrics.Gauge(MetricStreams, func() float64 { return float64(s.streams()) })
		h.Metrics.Gauge(MetricSources, func() float64 { return float64(s.sources()) })
		h.Metrics.Gauge(MetricViewers, func() float64 { return float64(s.viewers()) })
		h.Metrics.Gauge(MetricViewersTURN, func() float64 { return float64(s.turnViewers()) })
		h.Metrics.Gauge(MetricAudioListeners, func() float64 { return float64(s.audioListeners()) })
		h.Metrics.Counter(MetricPointerDropped) // listed from the start, at zero
		h.Metrics.Counter(MetricKeysDropped)
		if !vp8.Available {
			s.limitation = vp8.Limitation
			return s, nil
		}
		if err := s.listen(o); err != nil {
			s.limitation = err.Error()
			s.log.Error("streams unavailable", "err", err)
		}
		return s, nil
	}
}

func (s *Service) listen(o Options) error {
	addr := o.UDPAddr
	if addr == "" {
		addr = net.JoinHostPort("", strconv.Itoa(DefaultMediaPort))
	}
	udp, rb, wb, err := rtc.ListenUDP(addr)
	if err != nil {
		for _, alt := range o.UDPFallbacks {
			if c, r, w, altErr := rtc.ListenUDP(alt); altErr == nil {
				udp, rb, wb = c, r, w
				s.log.Warn("the default media UDP port is taken (another daemon on this machine?): the media uses another port; give --media-port to choose it",
					"taken", addr, "err", err, "udp", udp.LocalAddr().String())
				break
			}
		}
		if udp == nil {
			return api.Errorf(api.KindEnv, "the media UDP address %s cannot be bound (%v): free it or pick another with --media-port", addr, err)
		}
	}
	if rb < rtc.SocketBufferBytes || wb < rtc.SocketBufferBytes {
		s.log.Warn("media UDP buffers are smaller than asked: large keyframes may lose packets; raise net.core.rmem_max and wmem_max or run as root",
			"read_bytes", rb, "write_bytes", wb, "want_bytes", rtc.SocketBufferBytes)
	}
	s.conns = append(s.conns, udp)
	frames, keys := s.host.Metrics.Counter(MetricFrames), s.host.Metrics.Counter(MetricKeyframes)
	bytes, encode := s.host.Metrics.Counter(MetricFrameBytes), s.host.Metrics.Counter(MetricEncodeMicros)
	keyEncode := s.host.Metrics.Counter(MetricKeyframeEncodeMicros)
	audioFrames, audioPackets := s.host.Metrics.Counter(MetricAudioFrames), s.host.Metrics.Counter(MetricAudioPackets)
	audioBytes, audioEncode := s.host.Metrics.Counter(MetricAudioBytes), s.host.Metrics.Counter(MetricAudioEncodeMicros)
	cfg := rtc.Config{UDP: udp, NAT1To1IPs: o.NAT1To1IPs, Logger: s.log, Audio: s.openAudio,
		OnEncoded: func(key bool, n int, took time.Duration) {
			frames.Add(1)
			if key {
				keys.Add(1)
				keyEncode.Add(took.Microseconds())
			}
			bytes.Add(int64(n))
			encode.Add(took.Microseconds())
		},
		OnAudio: func(sent bool, n int, took time.Duration) {
			audioFrames.Add(1)
			if sent {
				audioPackets.Add(1)
				audioBytes.Add(int64(n))
			}
			audioEncode.Add(took.Microseconds())
		}}
	if o.ICETCPAddr != "" {
		ln, err := net.Listen("tcp4", o.ICETCPAddr)
		if err != nil {
			udp.Close()
			return api.Errorf(api.KindEnv, "the ICE-TCP address %s cannot be bound (%v): free it or pick another with --media-ice-tcp", o.ICETCPAddr, err)
		}
		s.conns = append(s.conns, ln)
		cfg.TCP = ln
	}
	engine, err := rtc.NewEngine(cfg)
	if err != nil {
		return err
	}
	s.engine = engine
	s.log.Info("media listening", "udp", udp.LocalAddr().String(), "ice_tcp", o.ICETCPAddr, "nat_1to1", o.NAT1To1IPs)
	return nil
}

// UDPAddr is where the media socket listens (for tests and the log).
func (s *Service) UDPAddr() net.Addr {
	for _, c := range s.conns {
		if u, ok := c.(*net.UDPConn); ok {
			return u.LocalAddr()
		}
	}
	return nil
}

// Routes of the stream service. The offer, session and ICE routes take a
// stream ticket as well as the token. A viewer reaches them all but the
// list of sessions: its tickets and its offers are view-only whatever it
// asks (ticket.go, offer.go), and it ends only its own sessions.
func (s *Service) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodPost, Path: api.PathStreamTickets, Body: server.BodyJSON, Roles: server.ViewerRoles(), Handler: s.mintTicket},
		{Method: http.MethodPost, Path: api.PathStreamScreen, Feature: api.FeatureDesktopStream, Body: api.ContentTypeSDP,
			Ticket: server.TicketScopeStream, Roles: server.ViewerRoles(), Handler: s.offerScreen},
		{Method: http.MethodPost, Path: api.PathStreamWindow, Feature: api.FeatureWindowStream, Body: api.ContentTypeSDP,
			Ticket: server.TicketScopeStream, Roles: server.ViewerRoles(), Handler: s.offerWindow},
		{Method: http.MethodGet, Path: api.PathStreamSessions, Roles: server.EditorRoles(), Handler: s.listSessions},
		{Method: http.MethodDelete, Path: api.PathStreamSession, Ticket: server.TicketScopeStream, Roles: server.ViewerRoles(), Handler: s.deleteSession},
		{Method: http.MethodGet, Path: api.PathStreamICE, Ticket: server.TicketScopeStream, Roles: server.ViewerRoles(), Handler: s.iceServers},
		s.viewerRoute(),
	}
}

// Features: each needs the encoder, the media socket, and what its capture
// needs (the display for the screen, the window list for windows).
func (s *Service) Features() map[api.Feature]server.Probe {
	probe := func(needs api.Feature) server.Probe {
		return func(ctx context.Context) api.FeatureStatus {
			if s.limitation != "" {
				return api.FeatureStatus{Limitation: s.limitation}
			}
			return s.host.Feature(ctx, needs)
		}
	}
	return map[api.Feature]server.Probe{
		api.FeatureDesktopStream: probe(api.FeatureScreenshot),
		api.FeatureWindowStream:  probe(api.FeatureWindows),
		api.FeatureDesktopAudio:  s.audioFeature,
	}
}

// Limits of the streams.
func (s *Service) Limits(l *api.Limits) {
	l.MaxStreamViewers = rtc.MaxViewers
	l.MaxStreamViewersPerTicket = api.MaxStreamViewersPerTicket
	l.StreamConnectTimeoutSeconds = int(math.Ceil(s.connectTimeout.Seconds()))
	l.MaxTicketTTLSeconds = api.MaxTicketTTLSeconds
	l.MaxStreamFPS = api.MaxStreamFPS
}

// Close ends every viewer and stream, and the media sockets.
func (s *Service) Close() {
	s.stop()
	if s.engine != nil {
		s.engine.Close()
	}
	for _, c := range s.conns {
		_ = c.Close()
	}
}

func (s *Service) streams() int {
	if s.engine == nil {
		return 0
	}
	return s.engine.Streams()
}

func (s *Service) sources() int {
	if s.engine == nil {
		return 0
	}
	return s.engine.Captures()
}

func (s *Service) viewers() int {
	if s.engine == nil {
		return 0
	}
	return s.engine.Viewers()
}

func (s *Service) audioListeners() int {
	if s.engine == nil {
		return 0
	}
	return s.engine.AudioListeners()
}

func (s *Service) turnViewers() int {
	if s.engine == nil {
		return 0
	}
	return s.engine.TURNViewers()
}
