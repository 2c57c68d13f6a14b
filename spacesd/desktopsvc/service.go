// Package desktopsvc is the desktop service of cua-spacesd: windows,
// launching apps, screenshots, input and the clipboard, one file per kind
// of operation. The work is capabilities/desktop; these handlers adapt
// HTTP to it. The Desktop connects to the display on first use, so a daemon
// without a display loads nothing.
package desktopsvc

import (
	"context"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Service serves the windows, screenshot, input, clipboard.text and
// launch_app features.
type Service struct {
	d *desktop.Desktop
}

// New returns the desktop service over d, which it closes at the hard
// shutdown.
func New(d *desktop.Desktop) server.NewService {
	return func(server.Host) (server.Service, error) { return &Service{d: d}, nil }
}

// Routes of the desktop service.
func (s *Service) Routes() []server.Route {
	json := server.BodyJSON
	return []server.Route{
		{Method: http.MethodGet, Path: api.PathWindows, Feature: api.FeatureWindows, Roles: server.ViewerRoles(), Handler: s.windows},
		{Method: http.MethodPost, Path: api.PathWindowActivate, Feature: api.FeatureWindows, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.activate},
		{Method: http.MethodPost, Path: api.PathWindowClose, Feature: api.FeatureWindows, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.closeWindow},
		{Method: http.MethodPost, Path: api.PathWindowGeometry, Feature: api.FeatureWindows, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.geometry},
		{Method: http.MethodPost, Path: api.PathWindowState, Feature: api.FeatureWindows, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.windowState},
		{Method: http.MethodPost, Path: api.PathAppsLaunch, Feature: api.FeatureLaunchApp, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.launch)},
		{Method: http.MethodGet, Path: api.PathScreenshot, Feature: api.FeatureScreenshot, Roles: server.ViewerRoles(), Handler: s.screenshot},
		{Method: http.MethodPost, Path: api.PathInputMove, Feature: api.FeatureInput, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.move)},
		{Method: http.MethodPost, Path: api.PathInputClick, Feature: api.FeatureInput, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.click)},
		{Method: http.MethodPost, Path: api.PathInputDrag, Feature: api.FeatureInput, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.drag)},
		{Method: http.MethodPost, Path: api.PathInputScroll, Feature: api.FeatureInput, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.scroll)},
		{Method: http.MethodPost, Path: api.PathInputKey, Feature: api.FeatureInput, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.key)},
		{Method: http.MethodPost, Path: api.PathInputType, Feature: api.FeatureInput, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.typeText)},
		{Method: http.MethodGet, Path: api.PathClipboard, Feature: api.FeatureClipboardText, Roles: server.EditorRoles(), Handler: s.clipboardGet},
		{Method: http.MethodPut, Path: api.PathClipboard, Feature: api.FeatureClipboardText, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.clipboardSet)},
	}
}

// Features are probed on the display (connecting to it when needed).
func (s *Service) Features() map[api.Feature]server.Probe {
	out := make(map[api.Feature]server.Probe, len(desktop.Features))
	for _, f := range desktop.Features {
		out[f] = func(ctx context.Context) api.FeatureStatus { return s.d.Status(ctx)[f] }
	}
	return out
}

// Limits of the desktop: the capability's own bounds, so that a client
// reads the numbers the daemon enforces instead of keeping a copy.
func (s *Service) Limits(l *api.Limits) {
	l.MaxClickCount = desktop.MaxClickCount
	l.MaxScrollClicks = desktop.MaxScrollClicks
	l.MaxScreenshotDimension = desktop.MaxDimensionLimit
	l.MaxTypeChars = desktop.MaxTypeRunes
	l.MaxClipboardBytes = desktop.MaxClipboardBytes
}

// Close drops the X connection.
func (s *Service) Close() { s.d.Close() }
