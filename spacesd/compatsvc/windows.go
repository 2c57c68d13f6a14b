package compatsvc

import (
	"context"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// The window commands map onto capabilities/desktop's EWMH windows: ids are
// X window ids, sizes and positions those of the window's content, in
// screen pixels (as GET /v1/windows reports them).

type openParams struct {
	Target string `json:"target"`
}

// open hands a URL or a file to xdg-open, as computer-server did on Linux,
// started as an app of the daemon (in its own cgroup, listed, killable).
func open(ctx context.Context, c *conn, p openParams) (any, error) {
	target := p.Target
	if target == "" {
		return nil, api.Errorf(api.KindInvalidArgument, "target is empty; give a URL or a path")
	}
	if !strings.Contains(target, "://") {
		path, err := resolvePath(target)
		if err != nil {
			return nil, err
		}
		target = path
	}
	_, err := c.svc.desk.LaunchApp(ctx, api.LaunchRequest{Argv: []string{"xdg-open", target}})
	return nil, err
}

type launchParams struct {
	App  string   `json:"app"`
	Args []string `json:"args"`
}

type launchResult struct {
	PID int `json:"pid"`
}

// launch starts an app: the app and its args as argv, or, without args,
// the app string as a shell command ("libreoffice --writer"), as
// computer-server did.
func launch(ctx context.Context, c *conn, p launchParams) (any, error) {
	if strings.TrimSpace(p.App) == "" {
		return nil, api.Errorf(api.KindInvalidArgument, "app is empty")
	}
	req := api.LaunchRequest{Shell: p.App}
	if len(p.Args) > 0 {
		req = api.LaunchRequest{Argv: append([]string{p.App}, p.Args...)}
	}
	res, err := c.svc.desk.LaunchApp(ctx, req)
	if err != nil {
		return nil, err
	}
	return launchResult{PID: res.PID}, nil
}

type windowIDResult struct {
	WindowID uint32 `json:"window_id"`
}

// focused is the window that has the focus.
func (c *conn) focused(ctx context.Context) (api.Window, error) {
	list, err := c.svc.desk.Windows(ctx, "")
	if err != nil {
		return api.Window{}, err
	}
	for _, w := range list {
		if w.Focused {
			return w, nil
		}
	}
	return api.Window{}, api.Errorf(api.KindNotFound, "no window has the focus").WithHint("activate a window first (activate_window)")
}

func currentWindowID(ctx context.Context, c *conn, _ none) (any, error) {
	w, err := c.focused(ctx)
	if err != nil {
		return nil, err
	}
	return windowIDResult{WindowID: w.WindowID}, nil
}

type appParams struct {
	App string `json:"app"`
}

type windowsResult struct {
	Windows []uint32 `json:"windows"`
}

// applicationWindows lists the windows whose app name, instance or title
// holds app (case-insensitive): computer-server matched titles, and an
// app's name is what a caller usually has.
func applicationWindows(ctx context.Context, c *conn, p appParams) (any, error) {
	list, err := c.svc.desk.Windows(ctx, p.App)
	if err != nil {
		return nil, err
	}
	ids := make([]uint32, 0, len(list))
	for _, w := range list {
		ids = append(ids, w.WindowID)
	}
	return windowsResult{Windows: ids}, nil
}

type windowParams struct {
	WindowID windowID `json:"window_id"`
}

type nameResult struct {
	Name string `json:"name"`
}

func windowName(ctx context.Context, c *conn, p windowParams) (any, error) {
	w, err := c.svc.desk.Window(ctx, uint32(p.WindowID))
	if err != nil {
		return nil, err
	}
	return nameResult{Name: w.Title}, nil
}

func windowSize(ctx context.Context, c *conn, p windowParams) (any, error) {
	w, err := c.svc.desk.Window(ctx, uint32(p.WindowID))
	if err != nil {
		return nil, err
	}
	return sizeOf{w.Bounds.Width, w.Bounds.Height}, nil
}

func windowPosition(ctx context.Context, c *conn, p windowParams) (any, error) {
	w, err := c.svc.desk.Window(ctx, uint32(p.WindowID))
	if err != nil {
		return nil, err
	}
	return position{w.Bounds.X, w.Bounds.Y}, nil
}

type setSizeParams struct {
	WindowID windowID `json:"window_id"`
	Width    int      `json:"width"`
	Height   int      `json:"height"`
}

func setWindowSize(ctx context.Context, c *conn, p setSizeParams) (any, error) {
	_, err := c.svc.desk.SetWindowGeometry(ctx, uint32(p.WindowID), api.GeometryRequest{Width: &p.Width, Height: &p.Height})
	return nil, err
}

type setPositionParams struct {
	WindowID windowID `json:"window_id"`
	X        int      `json:"x"`
	Y        int      `json:"y"`
}

func setWindowPosition(ctx context.Context, c *conn, p setPositionParams) (any, error) {
	_, err := c.svc.desk.SetWindowGeometry(ctx, uint32(p.WindowID), api.GeometryRequest{X: &p.X, Y: &p.Y})
	return nil, err
}

func windowState(state api.WindowState) func(context.Context, *conn, windowParams) (any, error) {
	return func(ctx context.Context, c *conn, p windowParams) (any, error) {
		_, err := c.svc.desk.SetWindowState(ctx, uint32(p.WindowID), state)
		return nil, err
	}
}

func activateWindow(ctx context.Context, c *conn, p windowParams) (any, error) {
	_, err := c.svc.desk.ActivateWindow(ctx, uint32(p.WindowID))
	return nil, err
}

func closeWindow(ctx context.Context, c *conn, p windowParams) (any, error) {
	return nil, c.svc.desk.CloseWindow(ctx, uint32(p.WindowID))
}

type boundsResult struct {
	Bounds api.Rect `json:"bounds"`
}

// activeWindowBounds answers the Python client's get_active_window_bounds.
func activeWindowBounds(ctx context.Context, c *conn, _ none) (any, error) {
	w, err := c.focused(ctx)
	if err != nil {
		return nil, err
	}
	return boundsResult{Bounds: w.Bounds}, nil
}

type environmentResult struct {
	Environment string `json:"environment"`
}

// desktopEnvironment answers the window manager's name (lower case):
// computer-server named the desktop environment, which a Space with a bare
// window manager does not have.
func desktopEnvironment(ctx context.Context, c *conn, _ none) (any, error) {
	diag, err := c.svc.desk.Diagnose(ctx)
	if err != nil {
		return nil, api.CapabilityMissing(api.FeatureWindows, err.Error())
	}
	env := strings.ToLower(diag.WindowManager)
	if env == "" {
		env = "unknown"
	}
	return environmentResult{Environment: env}, nil
}
