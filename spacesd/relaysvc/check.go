package relaysvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// ErrNotConfigured: neither flags nor the state dir name a relay.
var ErrNotConfigured = errors.New("no relay configured")

// Check is doctor's look at the relay the flags (o.URLs...) or the state
// dir name, without attaching (a second session would replace the
// daemon's): the token is there and well formed, and each URL answers
// GET /health as a cua-relay over TLS trusted as configured. It answers
// what it found, and the first failure.
func Check(ctx context.Context, o Options) (string, error) {
	a, err := (&Service{o: o}).initialNoSave()
	if err != nil {
		return "", err
	}
	if a == nil {
		return "", ErrNotConfigured
	}
	var notes []string
	if a.Computer != "" {
		notes = append(notes, "computer "+a.Computer)
	}
	if a.GrantKey != "" {
		notes = append(notes, "grant key pinned")
	}
	tok, err := a.readToken()
	if err != nil {
		return "", err
	}
	if kind, err := protocol.ParseToken(tok); err != nil || kind != protocol.TokenComputer {
		return "", api.Errorf(api.KindInvalidArgument, "the relay token is not a computer token (cuac_...)")
	}
	cfg, err := tlsConfig(*a)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}}
	defer hc.CloseIdleConnections()
	for _, raw := range a.URLs {
		u, err := checkRelayURL(raw)
		if err != nil {
			return "", err
		}
		health := (&url.URL{Scheme: "https", Host: u.Host, Path: relayapi.PathHealth}).String()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
		if err != nil {
			return "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", fmt.Errorf("relay %s: %w", raw, err)
		}
		var h relayapi.Health
		err = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&h)
		resp.Body.Close()
		if err != nil || h.Relay != relayapi.RelayName {
			return "", fmt.Errorf("relay %s: %s answers, but not as a cua-relay (HTTP %d)", raw, health, resp.StatusCode)
		}
		notes = append(notes, fmt.Sprintf("%s reachable (cua-relay %s, node %s)", raw, h.Version, h.Node))
	}
	return strings.Join(notes, "; "), nil
}

// initialNoSave is initial without writing the state dir.
func (s *Service) initialNoSave() (*attachment, error) {
	dir := s.o.StateDir
	if len(s.o.URLs) > 0 {
		s.o.StateDir = "" // saveState is a no-op then
		defer func() { s.o.StateDir = dir }()
		saved, _ := loadState(dir)
		a, err := s.initialFrom(saved)
		return a, err
	}
	return loadState(dir)
}
