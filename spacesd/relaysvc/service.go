// Package relaysvc is relay_attach: the Space dials out to a cua-relay
// and keeps one control session with it (WSS, yamux), through which the
// relay opens a stream per caller connection. Each stream starts with a
// grant the relay signed; the Space checks it against the key it pinned
// and serves the daemon's whole handler on the stream as the grant's
// person (server.Host.ServeConn). The routes GET/PUT/DELETE /v1/relay
// attach and detach it at run time; the state dir keeps the attachment,
// so a restarted Space attaches again by itself.
package relaysvc

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Wait bounds of PUT /v1/relay (api.RelayAttachRequest.WaitMS).
const (
	DefaultAttachWait = 10 * time.Second
	MaxAttachWait     = 60 * time.Second
)

// Options configure the relay service.
type Options struct {
	// StateDir keeps relay.json and the token a PUT gave ("" = memory only:
	// a restart forgets the attachment).
	StateDir string
	// URLs, TokenFile, Fingerprint and CAFile are the --relay flags: when
	// URLs are set they win over the state dir (what a session learnt of
	// the same relay, its name and key, is kept).
	URLs        []string
	TokenFile   string
	Fingerprint string
	CAFile      string
	// Version is the daemon's, sent in the Hello.
	Version string
	// Clock drives backoff and heartbeats (nil: the real one); Now is the
	// wall clock grants are checked at (nil: time.Now); Rand draws the
	// backoff's jitter in [0, 1) (nil: math/rand).
	Clock  Clock
	Now    func() time.Time
	Rand   func() float64
	Logger *slog.Logger
}

// Service is the relay_attach service.
type Service struct {
	o   Options
	att *attacher
}

// New returns the relay service. It attaches at once when the flags or the
// state dir name a relay.
func New(o Options) server.NewService {
	return func(h server.Host) (server.Service, error) {
		if o.Clock == nil {
			o.Clock = realClock{start: time.Now()}
		}
		if o.Now == nil {
			o.Now = time.Now
		}
		if o.Logger == nil {
			o.Logger = h.Log
		}
		if o.Logger == nil {
			o.Logger = slog.New(slog.DiscardHandler)
		}
		s := &Service{o: o, att: newAttacher(o, h.ServeConn, h.Kick)}
		if h.Metrics != nil {
			s.att.streams, s.att.refused = h.Metrics.Counter(metricStreams), h.Metrics.Counter(metricGrantsRefused)
			h.Metrics.Gauge(metricDials, func() float64 { return float64(s.att.dials.Load()) })
			h.Metrics.Gauge(metricRelayConnected, func() float64 {
				if s.Status().Connected {
					return 1
				}
				return 0
			})
		}
		att, err := s.initial()
		if err != nil {
			return nil, err
		}
		if att != nil {
			_ = s.att.start(*att, nil)
		}
		return s, nil
	}
}

// initial is the attachment at start-up: the flags', else the state dir's.
func (s *Service) initial() (*attachment, error) {
	saved, err := loadState(s.o.StateDir)
	if err != nil {
		// A damaged file must not stop the daemon; the flags or a PUT fix it.
		s.logger().Warn("relay: the state dir's attachment is unreadable; not attaching from it", "err", err)
		saved = nil
	}
	if len(s.o.URLs) == 0 {
		return saved, nil
	}
	return s.initialFrom(saved)
}

// initialFrom is the flags' attachment, keeping what saved learnt of the
// same relay, and kept in the state dir.
func (s *Service) initialFrom(saved *attachment) (*attachment, error) {
	var err error
	a := attachment{URLs: s.o.URLs, Fingerprint: s.o.Fingerprint}
	for _, u := range a.URLs {
		if _, err := checkRelayURL(u); err != nil {
			return nil, err
		}
	}
	if s.o.TokenFile == "" {
		return nil, api.Errorf(api.KindInvalidArgument, "--relay needs --relay-token-file")
	}
	if a.TokenPath, err = filepath.Abs(s.o.TokenFile); err != nil {
		return nil, err
	}
	if s.o.CAFile != "" {
		b, err := os.ReadFile(s.o.CAFile)
		if err != nil {
			return nil, api.Errorf(api.KindInvalidArgument, "--relay-ca: %w", err)
		}
		a.CAPEM = string(b)
	}
	if _, err := tlsConfig(a); err != nil {
		return nil, err
	}
	if saved != nil && saved.sameRelay(a) {
		a.Computer, a.GrantKey, a.LastURL = saved.Computer, saved.GrantKey, saved.LastURL
	}
	if err := saveState(s.o.StateDir, a); err != nil {
		s.logger().Warn("relay: cannot keep the attachment in the state dir", "err", err)
	}
	return &a, nil
}

func (s *Service) logger() *slog.Logger {
	if s.o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.o.Logger
}

// Routes of the relay service.
func (s *Service) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodGet, Path: api.PathRelay, Feature: api.FeatureRelayAttach, Roles: server.EditorRoles(), Handler: func(w http.ResponseWriter, r *http.Request) {
			httpapi.WriteJSON(w, http.StatusOK, s.Status())
		}},
		{Method: http.MethodPut, Path: api.PathRelay, Feature: api.FeatureRelayAttach, Body: server.BodyJSON, Idempotent: true, Handler: s.handleAttach},
		{Method: http.MethodDelete, Path: api.PathRelay, Feature: api.FeatureRelayAttach, Idempotent: true, Handler: s.handleDetach},
	}
}

// Features: relay_attach is served by every build.
func (s *Service) Features() map[api.Feature]server.Probe {
	return map[api.Feature]server.Probe{api.FeatureRelayAttach: func(context.Context) api.FeatureStatus {
		return api.FeatureStatus{Supported: true}
	}}
}

func (s *Service) Limits(*api.Limits) {}

// ReportCapabilities adds the attachment's state to the capabilities.
func (s *Service) ReportCapabilities(c *api.Capabilities) {
	st := s.Status()
	c.Relay = &st
}

// Close detaches for the hard stop (the state dir keeps the attachment).
func (s *Service) Close() { s.att.close() }

// Status is the attachment's state (GET /v1/relay).
func (s *Service) Status() api.RelayStatus { return s.att.status() }

// handleAttach is PUT /v1/relay: check the request, keep it, (re)attach,
// and wait a little for the first session. Called through the relay, the
// session it replaces is the one carrying the call: it answers at once
// (connected false; GET /v1/relay tells when the new one is up), and
// re-attaches once the answer has left.
func (s *Service) handleAttach(w http.ResponseWriter, r *http.Request) {
	req, err := httpapi.DecodeBody[api.RelayAttachRequest](r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	a, wait, err := s.prepare(req)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	persist := func(a *attachment) error { return s.persist(a, req.Token) }
	if viaRelay(r) {
		answerThen(w, api.RelayStatus{Attached: true, URLs: a.URLs, Fingerprint: a.Fingerprint}, func() {
			if err := s.att.start(a, persist); err != nil {
				s.logger().Error("relay: cannot keep the new attachment; detached", "err", err)
			}
		}, &s.att.wg)
		return
	}
	if err := s.att.start(a, persist); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, s.att.waitConnected(r.Context(), wait))
}

// handleDetach is DELETE /v1/relay; through the relay it answers before
// the session carrying it ends.
func (s *Service) handleDetach(w http.ResponseWriter, r *http.Request) {
	if viaRelay(r) {
		if _, ok := s.att.current(); !ok {
			httpapi.WriteJSON(w, http.StatusOK, api.RelayDetached{})
			return
		}
		answerThen(w, api.RelayDetached{Detached: true}, func() {
			if _, err := s.detach(); err != nil {
				s.logger().Warn("relay: detach", "err", err)
			}
		}, &s.att.wg)
		return
	}
	res, err := s.detach()
	httpapi.Answer(w, res, err)
}

// viaRelay reports whether r came through the relay.
func viaRelay(r *http.Request) bool {
	p := server.CallerOf(r.Context()).Principal
	return p != nil && p.Via == server.ViaRelay
}

// answerThen answers v whole (a length, not chunks), flushes it onto the
// connection, and only then runs then: what then ends may be the
// connection that carries the answer.
func answerThen(w http.ResponseWriter, v any, then func(), wg *sync.WaitGroup) {
	b, err := json.Marshal(v)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	_ = http.NewResponseController(w).Flush()
	wg.Add(1)
	go func() {
		defer wg.Done()
		then()
	}()
}

// prepare checks a PUT's request and keeps it in the state dir: the
// attachment to start, and how long the call may wait for it.
func (s *Service) prepare(req api.RelayAttachRequest) (attachment, time.Duration, error) {
	if len(req.URLs) == 0 {
		return attachment{}, 0, api.Errorf(api.KindInvalidArgument, "urls: name at least one wss:// URL of the relay")
	}
	for _, u := range req.URLs {
		if _, err := checkRelayURL(u); err != nil {
			return attachment{}, 0, err
		}
	}
	kind, err := protocol.ParseToken(req.Token)
	if err != nil {
		return attachment{}, 0, err
	}
	if kind != protocol.TokenComputer {
		return attachment{}, 0, api.Errorf(api.KindInvalidArgument, "token: a %s_ token, want a computer token (%s_)", kind, protocol.TokenComputer)
	}
	if req.WaitMS < 0 {
		return attachment{}, 0, api.Errorf(api.KindInvalidArgument, "wait_ms: %d is negative", req.WaitMS)
	}
	wait := DefaultAttachWait
	if req.WaitMS > 0 {
		wait = min(time.Duration(req.WaitMS)*time.Millisecond, MaxAttachWait)
	}
	// A PUT is the owner's deliberate word: the name and the grant key
	// are learnt again from the next welcome.
	a := attachment{URLs: req.URLs, Fingerprint: strings.TrimSpace(req.Fingerprint), CAPEM: req.CAPEM}
	if _, err := tlsConfig(a); err != nil {
		return attachment{}, 0, err
	}
	// The node that worked is still a fine first dial.
	if cur, ok := s.att.current(); ok && cur.sameRelay(a) {
		a.LastURL = cur.LastURL
	}
	return a, wait, nil
}

// persist keeps a PUT's attachment and token in the state dir (the token
// in memory only without one), once the previous attachment has stopped.
func (s *Service) persist(a *attachment, token string) error {
	if s.o.StateDir == "" {
		a.token = token
		return nil
	}
	a.TokenPath = filepath.Join(s.o.StateDir, TokenFile)
	if err := writeAtomic(a.TokenPath, []byte(token+"\n")); err != nil {
		return api.Errorf(api.KindIO, "keep the relay token: %w", err)
	}
	if err := saveState(s.o.StateDir, *a); err != nil {
		return api.Errorf(api.KindIO, "keep the relay attachment: %w", err)
	}
	return nil
}

// detach is DELETE /v1/relay: stop dialing and forget the relay.
func (s *Service) detach() (api.RelayDetached, error) {
	was := s.att.stop()
	if err := forgetState(s.o.StateDir); err != nil {
		return api.RelayDetached{}, api.Errorf(api.KindIO, "forget the relay attachment: %w", err)
	}
	return api.RelayDetached{Detached: was}, nil
}
