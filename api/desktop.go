package api

// Routes of the desktop capability.
const (
	PathWindows        = "/v1/windows"
	PathWindowActivate = "/v1/windows/{id}/activate"
	PathWindowClose    = "/v1/windows/{id}/close"
	PathWindowGeometry = "/v1/windows/{id}/geometry"
	PathWindowState    = "/v1/windows/{id}/state"
	PathAppsLaunch     = "/v1/apps/launch"
	PathScreenshot     = "/v1/screenshot"
	PathInputMove      = "/v1/input/move"
	PathInputClick     = "/v1/input/click"
	PathInputDrag      = "/v1/input/drag"
	PathInputScroll    = "/v1/input/scroll"
	PathInputKey       = "/v1/input/key"
	PathInputType      = "/v1/input/type"
	PathClipboard      = "/v1/clipboard"
)

// ScreenshotInfoHeader carries the JSON ScreenshotInfo of a screenshot
// answer, whose body is the image itself.
const ScreenshotInfoHeader = "X-Cua-Screenshot"

// Screenshot formats.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
)

// Mouse buttons.
const (
	ButtonLeft   = "left"
	ButtonMiddle = "middle"
	ButtonRight  = "right"
)

// Rect is a rectangle in screen (root window) pixels.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Window is one top-level application window.
type Window struct {
	WindowID uint32 `json:"window_id"`
	Title    string `json:"title"`
	// AppName is the application's class (WM_CLASS class, e.g. "XTerm").
	AppName string `json:"app_name"`
	// Instance is the WM_CLASS instance name (e.g. "xterm").
	Instance string `json:"instance,omitempty"`
	PID      int    `json:"pid,omitempty"`
	// Bounds are the window's content (without the frame) in screen pixels.
	Bounds   Rect `json:"bounds"`
	Focused  bool `json:"focused"`
	OnScreen bool `json:"on_screen"`
	// State is how the window manager shows the window: one of the
	// WindowState values ("" from a daemon that does not read it).
	State WindowState `json:"state,omitempty"`
}

// WindowState is how the window manager shows a window.
type WindowState string

// Window states. Normal, Minimized and Maximized can be asked for (POST
// /v1/windows/{id}/state); Fullscreen is only reported (a window puts
// itself there), and asking for Normal leaves it too.
const (
	WindowNormal     WindowState = "normal"
	WindowMinimized  WindowState = "minimized"
	WindowMaximized  WindowState = "maximized"
	WindowFullscreen WindowState = "fullscreen"
)

// WindowStateRequest is the body of POST /v1/windows/{id}/state.
type WindowStateRequest struct {
	// State is "normal" (restore), "minimized" or "maximized".
	State WindowState `json:"state"`
}

// GeometryRequest is the body of POST /v1/windows/{id}/geometry. Unset
// fields keep their current value; the values are the content's, as in
// Window.Bounds.
type GeometryRequest struct {
	X      *int `json:"x,omitempty"`
	Y      *int `json:"y,omitempty"`
	Width  *int `json:"width,omitempty"`
	Height *int `json:"height,omitempty"`
}

// LaunchRequest is the body of POST /v1/apps/launch. Exactly one of Argv and
// Shell is set. The app runs detached, as one of the daemon's processes (in
// a cgroup of its own where the daemon contains processes), with DISPLAY
// set to the daemon's display.
type LaunchRequest struct {
	Argv  []string          `json:"argv,omitempty"`
	Shell string            `json:"shell,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Cwd   string            `json:"cwd,omitempty"`
	// WaitForWindow waits until a window of a process of the app's tree
	// (its cgroup, or its process group) is listed (so `app &` and
	// launcher scripts count too).
	WaitForWindow bool `json:"wait_for_window,omitempty"`
	// TimeoutMS bounds the wait for the window; 0 = the daemon's default.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// LaunchResult is the answer of POST /v1/apps/launch.
type LaunchResult struct {
	PID int `json:"pid"`
	// ProcessID is the app's id in GET /v1/processes: its output, status
	// and signals are there.
	ProcessID string `json:"process_id,omitempty"`
	// Window is the app's first window, when WaitForWindow was asked.
	Window *Window `json:"window,omitempty"`
}

// ScreenshotRequest selects what GET /v1/screenshot captures.
type ScreenshotRequest struct {
	// WindowID captures one window's own content (also when covered); 0 = the screen.
	WindowID uint32
	// Format is "png" (default) or "jpeg".
	Format string
	// Quality is the JPEG quality 1-100; 0 = the daemon's default.
	Quality int
	// MaxDimension scales the image down so that neither side exceeds it; 0 = no scaling.
	MaxDimension int
}

// ScreenshotInfo describes a screenshot. The coordinate rule: the pixel
// (x, y) of the image is the screen point (Bounds.X + x/Scale, Bounds.Y +
// y/Scale). Input calls accept the image's coordinates as they are when
// given the same Scale and WindowID (see Pointer).
type ScreenshotInfo struct {
	Width  int `json:"width"`
	Height int `json:"height"`
	// Scale is image pixels per screen pixel: 1 unscaled, below 1 when
	// max_dimension scaled the image down.
	Scale  float64 `json:"scale"`
	Format string  `json:"format"`
	// Bounds is the captured area in screen pixels (the whole screen, or
	// the window's content).
	Bounds   Rect   `json:"bounds"`
	WindowID uint32 `json:"window_id,omitempty"`
}

// Pointer says how to read the x/y of an input call: screen pixels by
// default; with Scale (from a scaled screenshot) the daemon divides x and y
// by it; with WindowID they are relative to that window's content, as in
// its own screenshot. Passing a screenshot's scale and window_id with its
// pixel coordinates always hits the pixel the screenshot showed.
type Pointer struct {
	Scale    float64 `json:"scale,omitempty"`
	WindowID uint32  `json:"window_id,omitempty"`
}

// MouseMoveRequest is the body of POST /v1/input/move.
type MouseMoveRequest struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	Pointer
}

// ClickRequest is the body of POST /v1/input/click.
type ClickRequest struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	// Button is left (default), middle or right.
	Button string `json:"button,omitempty"`
	// Count is the number of clicks (2 = double-click); 0 means 1.
	Count int `json:"count,omitempty"`
	Pointer
}

// DragRequest is the body of POST /v1/input/drag: press at From, move to
// To in steps, release.
type DragRequest struct {
	FromX  float64 `json:"from_x"`
	FromY  float64 `json:"from_y"`
	ToX    float64 `json:"to_x"`
	ToY    float64 `json:"to_y"`
	Button string  `json:"button,omitempty"`
	// DurationMS spreads the motion over that time; 0 = the daemon's default.
	DurationMS int64 `json:"duration_ms,omitempty"`
	Pointer
}

// ScrollRequest is the body of POST /v1/input/scroll. DY > 0 scrolls down,
// DX > 0 right, in wheel clicks. Without X and Y it scrolls where the
// pointer is.
type ScrollRequest struct {
	X  *float64 `json:"x,omitempty"`
	Y  *float64 `json:"y,omitempty"`
	DX int      `json:"dx,omitempty"`
	DY int      `json:"dy,omitempty"`
	Pointer
}

// KeyRequest is the body of POST /v1/input/key: one key or hotkey, as
// modifiers and a key joined by "+": "Return", "ctrl+shift+t", "alt+F4".
type KeyRequest struct {
	Key string `json:"key"`
}

// TypeRequest is the body of POST /v1/input/type: any Unicode text.
type TypeRequest struct {
	Text string `json:"text"`
}

// InputResult says what an input call delivered.
type InputResult struct {
	// X and Y are where the pointer is afterwards, in screen pixels.
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Button string `json:"button,omitempty"`
	Count  int    `json:"count,omitempty"`
	Key    string `json:"key,omitempty"`
	// Chars is the number of characters typed.
	Chars int `json:"chars,omitempty"`
}

// ClipboardText is the body of GET and PUT /v1/clipboard.
type ClipboardText struct {
	Text string `json:"text"`
}
