package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
)

// desktopGroup serves the desktop capability. The Desktop connects to the
// display on first use, so a daemon without a display loads nothing.
type desktopGroup struct {
	d *desktop.Desktop
}

func newDesktopGroup(s *Server) (group, error) {
	return &desktopGroup{d: desktop.New(desktop.Options{Display: s.cfg.Display, Logger: s.log.With("capability", "desktop")})}, nil
}

func (g *desktopGroup) routes() []route {
	return []route{
		{method: http.MethodGet, path: api.PathWindows, feature: api.FeatureWindows, handler: g.windows},
		{method: http.MethodPost, path: api.PathWindowActivate, feature: api.FeatureWindows, handler: g.activate},
		{method: http.MethodPost, path: api.PathWindowClose, feature: api.FeatureWindows, handler: g.closeWindow},
		{method: http.MethodPost, path: api.PathWindowGeometry, feature: api.FeatureWindows, handler: g.geometry},
		{method: http.MethodPost, path: api.PathAppsLaunch, feature: api.FeatureLaunchApp, handler: bodyRoute(g.launch)},
		{method: http.MethodGet, path: api.PathScreenshot, feature: api.FeatureScreenshot, handler: g.screenshot},
		{method: http.MethodPost, path: api.PathInputMove, feature: api.FeatureInput, handler: bodyRoute(g.move)},
		{method: http.MethodPost, path: api.PathInputClick, feature: api.FeatureInput, handler: bodyRoute(g.click)},
		{method: http.MethodPost, path: api.PathInputDrag, feature: api.FeatureInput, handler: bodyRoute(g.drag)},
		{method: http.MethodPost, path: api.PathInputScroll, feature: api.FeatureInput, handler: bodyRoute(g.scroll)},
		{method: http.MethodPost, path: api.PathInputKey, feature: api.FeatureInput, handler: bodyRoute(g.key)},
		{method: http.MethodPost, path: api.PathInputType, feature: api.FeatureInput, handler: bodyRoute(g.typeText)},
		{method: http.MethodGet, path: api.PathClipboard, feature: api.FeatureClipboardText, handler: g.clipboardGet},
		{method: http.MethodPut, path: api.PathClipboard, feature: api.FeatureClipboardText, handler: bodyRoute(g.clipboardSet)},
	}
}

func (g *desktopGroup) probes() map[api.Feature]Prober {
	out := make(map[api.Feature]Prober, len(desktop.Features))
	for _, f := range desktop.Features {
		out[f] = func(ctx context.Context) api.FeatureStatus { return g.d.Status(ctx)[f] }
	}
	return out
}

func (g *desktopGroup) limits(*api.Limits) {}
func (g *desktopGroup) close()             { g.d.Close() }

// windowID parses the {id} of a window route.
func windowID(r *http.Request) (uint32, error) {
	s := r.PathValue("id")
	id, err := strconv.ParseUint(s, 0, 32)
	if err != nil || id == 0 {
		return 0, api.Errorf(api.KindInvalidArgument, "window id %q is not a window id (a number from GET /v1/windows)", s)
	}
	return uint32(id), nil
}

func (g *desktopGroup) windows(w http.ResponseWriter, r *http.Request) {
	list, err := g.d.Windows(r.Context(), r.URL.Query().Get("app_name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (g *desktopGroup) activate(w http.ResponseWriter, r *http.Request) {
	id, err := windowID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	win, err := g.d.ActivateWindow(r.Context(), id)
	answer(w, win, err)
}

func (g *desktopGroup) closeWindow(w http.ResponseWriter, r *http.Request) {
	id, err := windowID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	answer(w, noContent{}, g.d.CloseWindow(r.Context(), id))
}

func (g *desktopGroup) geometry(w http.ResponseWriter, r *http.Request) {
	id, err := windowID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := decodeBody[api.GeometryRequest](r)
	if err != nil {
		writeError(w, err)
		return
	}
	win, err := g.d.SetWindowGeometry(r.Context(), id, req)
	answer(w, win, err)
}

func (g *desktopGroup) launch(r *http.Request, req api.LaunchRequest) (*api.LaunchResult, error) {
	return g.d.LaunchApp(r.Context(), req)
}

func (g *desktopGroup) screenshot(w http.ResponseWriter, r *http.Request) {
	id, err := queryInt(r, "window_id", 0, 0, 1<<32-1)
	if err != nil {
		writeError(w, err)
		return
	}
	quality, err := queryInt(r, "quality", 0, 1, 100)
	if err != nil {
		writeError(w, err)
		return
	}
	maxDim, err := queryInt(r, "max_dimension", 0, 0, desktop.MaxDimensionLimit)
	if err != nil {
		writeError(w, err)
		return
	}
	img, info, err := g.d.Screenshot(r.Context(), api.ScreenshotRequest{
		WindowID: uint32(id), Format: r.URL.Query().Get("format"), Quality: int(quality), MaxDimension: int(maxDim),
	})
	if err != nil {
		writeError(w, err)
		return
	}
	meta, _ := json.Marshal(info)
	w.Header().Set(api.ScreenshotInfoHeader, string(meta))
	w.Header().Set("Content-Type", "image/"+info.Format)
	w.Header().Set("Content-Length", strconv.Itoa(len(img)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(img)
}

func (g *desktopGroup) move(r *http.Request, req api.MouseMoveRequest) (api.InputResult, error) {
	return g.d.MoveMouse(r.Context(), req)
}

func (g *desktopGroup) click(r *http.Request, req api.ClickRequest) (api.InputResult, error) {
	return g.d.Click(r.Context(), req)
}

func (g *desktopGroup) drag(r *http.Request, req api.DragRequest) (api.InputResult, error) {
	return g.d.Drag(r.Context(), req)
}

func (g *desktopGroup) scroll(r *http.Request, req api.ScrollRequest) (api.InputResult, error) {
	return g.d.Scroll(r.Context(), req)
}

func (g *desktopGroup) key(r *http.Request, req api.KeyRequest) (api.InputResult, error) {
	return g.d.Key(r.Context(), req.Key)
}

func (g *desktopGroup) typeText(r *http.Request, req api.TypeRequest) (api.InputResult, error) {
	return g.d.Type(r.Context(), req.Text)
}

func (g *desktopGroup) clipboardGet(w http.ResponseWriter, r *http.Request) {
	text, err := g.d.ClipboardGet(r.Context())
	answer(w, api.ClipboardText{Text: text}, err)
}

func (g *desktopGroup) clipboardSet(r *http.Request, req api.ClipboardText) (noContent, error) {
	return noContent{}, g.d.ClipboardSet(r.Context(), req.Text)
}
