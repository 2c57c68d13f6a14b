// Package a11ysvc is the accessibility service of cua-spacesd (feature
// a11y): the widget tree of a window, a search in it, and actions on its
// elements, by AT-SPI. The work is capabilities/a11y's; these handlers
// adapt HTTP to it.
package a11ysvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Service serves the a11y feature.
type Service struct {
	a *a11y.A11y
}

// New returns the service over a, which it closes with the daemon.
func New(a *a11y.A11y) server.NewService {
	return func(server.Host) (server.Service, error) { return &Service{a: a}, nil }
}

// Routes of the service: reading is a viewer's (as a screenshot is),
// acting an editor's (as input is).
func (s *Service) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodPost, Path: api.PathA11yTree, Feature: api.FeatureA11y, Body: server.BodyJSON, Roles: server.ViewerRoles(),
			Handler: httpapi.BodyRoute(func(r *http.Request, req api.A11yTreeRequest) (*api.A11yTree, error) {
				if err := checkTree(req); err != nil {
					return nil, err
				}
				return s.a.Tree(r.Context(), req)
			})},
		{Method: http.MethodPost, Path: api.PathA11yFind, Feature: api.FeatureA11y, Body: server.BodyJSON, Roles: server.ViewerRoles(),
			Handler: httpapi.BodyRoute(func(r *http.Request, q api.A11yQuery) (api.A11yFindResult, error) {
				found, err := s.a.Find(r.Context(), q)
				if found == nil {
					found = []api.A11yFound{}
				}
				return api.A11yFindResult{Elements: found}, err
			})},
		{Method: http.MethodPost, Path: api.PathA11yAction, Feature: api.FeatureA11y, Body: server.BodyJSON, Idempotent: true, Roles: server.EditorRoles(),
			Handler: httpapi.BodyRoute(func(r *http.Request, a api.A11yAction) (httpapi.NoContent, error) {
				return httpapi.NoContent{}, s.a.Act(r.Context(), a)
			})},
	}
}

// checkTree refuses bounds out of range before any walk.
func checkTree(req api.A11yTreeRequest) error {
	if req.MaxDepth < 0 || req.MaxNodes < 0 || req.MaxNodes > api.MaxA11yNodes {
		return api.Errorf(api.KindInvalidArgument, "max_depth must be 0 (no bound) or more, max_nodes from 0 (the default, %d) to %d", api.DefaultA11yMaxNodes, api.MaxA11yNodes)
	}
	return nil
}

// Features: a11y, probed on the accessibility bus.
func (s *Service) Features() map[api.Feature]server.Probe {
	return map[api.Feature]server.Probe{api.FeatureA11y: s.a.Status}
}

// Limits of the service (none beyond the request's own bounds).
func (s *Service) Limits(*api.Limits) {}

// Close drops the bus connection.
func (s *Service) Close() { s.a.Close() }
