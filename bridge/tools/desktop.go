package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
)

// Bounds of the desktop tools.
const (
	maxTypeChars      = 10000
	maxScreenshotEdge = 8192
	maxClickCount     = 3
	maxScrollClicks   = 100
	launchTimeoutMS   = 30000
)

// pointerArgs are the coordinate options every pointer tool takes: the
// coordinates of a (scaled) screenshot go in unchanged with its scale and
// window, and the Space maps them to the screen.
func pointerProps(props map[string]*jsonschema.Schema) map[string]*jsonschema.Schema {
	props["space"] = spaceArg()
	props["scale"] = &jsonschema.Schema{Type: "number", Description: "The scale of the screenshot the coordinates come from (its {scale}); default 1."}
	props["window_id"] = integer("The window the screenshot showed, when the coordinates are relative to it.", 0, 0, nil)
	return props
}

func number(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Description: desc}
}

type pointerArgs struct {
	Scale    float64 `json:"scale"`
	WindowID uint32  `json:"window_id"`
}

func (p pointerArgs) pointer() api.Pointer { return api.Pointer{Scale: p.Scale, WindowID: p.WindowID} }

func inputText(verb string, r *api.InputResult) string {
	b, _ := json.Marshal(r)
	return verb + ": " + string(b)
}

func desktopTools() []*Tool {
	return []*Tool{
		{
			Name:        "list_space_windows",
			Description: "List the windows on a Space's desktop with title, app, pid, bounds and focus; filter by app name substring.",
			Schema: object([]string{"space"}, map[string]*jsonschema.Schema{
				"space":    spaceArg(),
				"app_name": str("Only windows whose app name contains this (case-insensitive)."),
			}),
			TakesSpace: true, Requires: []api.Feature{api.FeatureWindows},
			Result: "{windows: [{window_id, title, app_name, pid, bounds, focused}]}",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					AppName string `json:"app_name"`
				}
				if err := decode(c, "list_space_windows", &a); err != nil {
					return nil, err
				}
				ws, err := c.Space.Client.Windows(ctx, a.AppName)
				if err != nil {
					return nil, err
				}
				if ws == nil {
					ws = []api.Window{}
				}
				var b strings.Builder
				for _, w := range ws {
					f := ""
					if w.Focused {
						f = " (focused)"
					}
					fmt.Fprintf(&b, "%d\t%s\t%q\tpid %d\t%dx%d+%d+%d%s\n", w.WindowID, w.AppName, w.Title, w.PID, w.Bounds.Width, w.Bounds.Height, w.Bounds.X, w.Bounds.Y, f)
				}
				if len(ws) == 0 {
					b.WriteString("no windows")
				}
				return &Result{Text: strings.TrimRight(b.String(), "\n"), Structured: map[string]any{"windows": ws}}, nil
			},
		},
		{
			Name:        "focus_space_window",
			Description: "Raise and focus a window on a Space's desktop.",
			Schema: object([]string{"space", "window_id"}, map[string]*jsonschema.Schema{
				"space":     spaceArg(),
				"window_id": integer("The window (from list_space_windows).", 1, 0, nil),
			}),
			TakesSpace: true, Requires: []api.Feature{api.FeatureWindows},
			Errors: []api.Kind{api.KindNotFound},
			Result: "the focused window {window_id, title, app_name, pid, bounds, focused}",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					WindowID uint32 `json:"window_id"`
				}
				if err := decode(c, "focus_space_window", &a); err != nil {
					return nil, err
				}
				w, err := c.Space.Client.ActivateWindow(ctx, a.WindowID)
				if err != nil {
					return nil, err
				}
				return &Result{Text: fmt.Sprintf("focused window %d (%s: %s)", w.WindowID, w.AppName, w.Title), Structured: w}, nil
			},
		},
		{
			Name:        "launch_app",
			Description: "Start an application on a Space's desktop (argv or a shell command line), optionally waiting for its first window.",
			Schema: object([]string{"space"}, map[string]*jsonschema.Schema{
				"space":           spaceArg(),
				"command":         str("Shell command line to run (e.g. \"xterm -e top\")."),
				"argv":            {Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: "Program and arguments, instead of command."},
				"wait_for_window": boolean("Wait until the app shows a window, and answer it.", true),
			}),
			TakesSpace: true, Requires: []api.Feature{api.FeatureLaunchApp},
			Errors: []api.Kind{api.KindTimeout},
			Result: "{pid, window?}",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					Command       string   `json:"command"`
					Argv          []string `json:"argv"`
					WaitForWindow *bool    `json:"wait_for_window"`
				}
				if err := decode(c, "launch_app", &a); err != nil {
					return nil, err
				}
				if (a.Command == "") == (len(a.Argv) == 0) {
					return nil, api.Errorf(api.KindInvalidArgument, "launch_app: pass exactly one of command and argv")
				}
				wait := a.WaitForWindow == nil || *a.WaitForWindow
				res, err := c.Space.Client.LaunchApp(ctx, api.LaunchRequest{Argv: a.Argv, Shell: a.Command, WaitForWindow: wait, TimeoutMS: launchTimeoutMS})
				if err != nil {
					return nil, err
				}
				text := fmt.Sprintf("launched pid %d", res.PID)
				if res.Window != nil {
					text += fmt.Sprintf(", window %d %q", res.Window.WindowID, res.Window.Title)
				}
				return &Result{Text: text, Structured: res}, nil
			},
		},
		{
			Name: "space_screenshot",
			Description: "Capture a Space's screen (or one window) as an image. Coordinates in the image, passed with its scale " +
				"(and window_id) to the pointer tools, land where the image shows them.",
			Schema: object([]string{"space"}, map[string]*jsonschema.Schema{
				"space":         spaceArg(),
				"window_id":     integer("Capture only this window.", 0, 0, nil),
				"format":        enum("Image format.", "png", "png", "jpeg"),
				"max_dimension": integer("Scale down so the longer edge is at most this many pixels.", 0, maxScreenshotEdge, nil),
			}),
			TakesSpace: true, Requires: []api.Feature{api.FeatureScreenshot},
			Errors: []api.Kind{api.KindNotFound},
			Result: "an image content part, and {width, height, scale, format, bounds, window_id?}",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					WindowID     uint32 `json:"window_id"`
					Format       string `json:"format"`
					MaxDimension int    `json:"max_dimension"`
				}
				if err := decode(c, "space_screenshot", &a); err != nil {
					return nil, err
				}
				img, info, err := c.Space.Client.Screenshot(ctx, api.ScreenshotRequest{WindowID: a.WindowID, Format: a.Format, MaxDimension: a.MaxDimension})
				if err != nil {
					return nil, err
				}
				mime := "image/png"
				if info.Format == api.FormatJPEG {
					mime = "image/jpeg"
				}
				return &Result{
					Image:      &Image{Data: img, MIMEType: mime},
					Text:       fmt.Sprintf("screenshot %dx%d, scale %g (pass scale=%g with these coordinates)", info.Width, info.Height, info.Scale, info.Scale),
					Structured: info,
				}, nil
			},
		},
		{
			Name:        "space_click",
			Description: "Click at a point on a Space's desktop (left, middle or right; count 2 double-clicks).",
			Schema: object([]string{"space", "x", "y"}, pointerProps(map[string]*jsonschema.Schema{
				"x":      number("X in screenshot coordinates."),
				"y":      number("Y in screenshot coordinates."),
				"button": enum("Mouse button.", api.ButtonLeft, api.ButtonLeft, api.ButtonMiddle, api.ButtonRight),
				"count":  integer("Clicks (2 = double-click).", 1, maxClickCount, 1),
			})),
			TakesSpace: true, Requires: []api.Feature{api.FeatureInput},
			Result: "what was delivered: {x, y, button, count} in screen pixels",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					X, Y   float64
					Button string
					Count  int
					pointerArgs
				}
				if err := decode(c, "space_click", &a); err != nil {
					return nil, err
				}
				r, err := c.Space.Client.Click(ctx, api.ClickRequest{X: a.X, Y: a.Y, Button: a.Button, Count: a.Count, Pointer: a.pointer()})
				if err != nil {
					return nil, err
				}
				return &Result{Text: inputText("clicked", r), Structured: r}, nil
			},
		},
		{
			Name:        "space_move_mouse",
			Description: "Move the pointer on a Space's desktop.",
			Schema: object([]string{"space", "x", "y"}, pointerProps(map[string]*jsonschema.Schema{
				"x": number("X in screenshot coordinates."),
				"y": number("Y in screenshot coordinates."),
			})),
			TakesSpace: true, Requires: []api.Feature{api.FeatureInput},
			Result: "what was delivered: {x, y} in screen pixels",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					X, Y float64
					pointerArgs
				}
				if err := decode(c, "space_move_mouse", &a); err != nil {
					return nil, err
				}
				r, err := c.Space.Client.MoveMouse(ctx, api.MouseMoveRequest{X: a.X, Y: a.Y, Pointer: a.pointer()})
				if err != nil {
					return nil, err
				}
				return &Result{Text: inputText("moved", r), Structured: r}, nil
			},
		},
		{
			Name:        "space_drag",
			Description: "Press a button at one point, move to another and release, on a Space's desktop.",
			Schema: object([]string{"space", "from_x", "from_y", "to_x", "to_y"}, pointerProps(map[string]*jsonschema.Schema{
				"from_x": number("Start X in screenshot coordinates."),
				"from_y": number("Start Y."),
				"to_x":   number("End X."),
				"to_y":   number("End Y."),
				"button": enum("Mouse button.", api.ButtonLeft, api.ButtonLeft, api.ButtonMiddle, api.ButtonRight),
			})),
			TakesSpace: true, Requires: []api.Feature{api.FeatureInput},
			Result: "what was delivered: {x, y, button} (the end point) in screen pixels",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					FromX  float64 `json:"from_x"`
					FromY  float64 `json:"from_y"`
					ToX    float64 `json:"to_x"`
					ToY    float64 `json:"to_y"`
					Button string  `json:"button"`
					pointerArgs
				}
				if err := decode(c, "space_drag", &a); err != nil {
					return nil, err
				}
				r, err := c.Space.Client.Drag(ctx, api.DragRequest{FromX: a.FromX, FromY: a.FromY, ToX: a.ToX, ToY: a.ToY, Button: a.Button, Pointer: a.pointer()})
				if err != nil {
					return nil, err
				}
				return &Result{Text: inputText("dragged", r), Structured: r}, nil
			},
		},
		{
			Name:        "space_scroll",
			Description: "Turn the mouse wheel on a Space's desktop, at a point or where the pointer is (dy > 0 scrolls down).",
			Schema: object([]string{"space"}, pointerProps(map[string]*jsonschema.Schema{
				"x":  number("X in screenshot coordinates (default: where the pointer is)."),
				"y":  number("Y in screenshot coordinates."),
				"dx": integer("Horizontal wheel clicks (> 0 right).", -maxScrollClicks, maxScrollClicks, 0),
				"dy": integer("Vertical wheel clicks (> 0 down).", -maxScrollClicks, maxScrollClicks, 0),
			})),
			TakesSpace: true, Requires: []api.Feature{api.FeatureInput},
			Result: "what was delivered: {x, y} in screen pixels",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct {
					X, Y   *float64
					DX, DY int
					pointerArgs
				}
				if err := decode(c, "space_scroll", &a); err != nil {
					return nil, err
				}
				r, err := c.Space.Client.Scroll(ctx, api.ScrollRequest{X: a.X, Y: a.Y, DX: a.DX, DY: a.DY, Pointer: a.pointer()})
				if err != nil {
					return nil, err
				}
				return &Result{Text: inputText("scrolled", r), Structured: r}, nil
			},
		},
		{
			Name:        "space_type",
			Description: "Type Unicode text into the focused window of a Space's desktop (characters without a key in the layout work too).",
			Schema: object([]string{"space", "text"}, map[string]*jsonschema.Schema{
				"space": spaceArg(),
				"text":  nonEmpty(fmt.Sprintf("The text (at most %d characters).", maxTypeChars)),
			}),
			TakesSpace: true, Requires: []api.Feature{api.FeatureInput},
			Result: "{chars} typed",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct{ Text string }
				if err := decode(c, "space_type", &a); err != nil {
					return nil, err
				}
				if n := len([]rune(a.Text)); n > maxTypeChars {
					return nil, api.Errorf(api.KindInvalidArgument, "space_type: %d characters is over %d", n, maxTypeChars)
				}
				r, err := c.Space.Client.Type(ctx, a.Text)
				if err != nil {
					return nil, err
				}
				return &Result{Text: fmt.Sprintf("typed %d characters", r.Chars), Structured: r}, nil
			},
		},
		{
			Name:        "space_press_key",
			Description: "Press a key or hotkey on a Space's desktop: X keysym names joined by '+', e.g. Return, Escape, ctrl+shift+t.",
			Schema: object([]string{"space", "key"}, map[string]*jsonschema.Schema{
				"space": spaceArg(),
				"key":   nonEmpty("The key or hotkey (e.g. Return, ctrl+c, alt+F4)."),
			}),
			TakesSpace: true, Requires: []api.Feature{api.FeatureInput},
			Result: "{key} pressed",
			Run: func(ctx context.Context, c *Call) (*Result, error) {
				var a struct{ Key string }
				if err := decode(c, "space_press_key", &a); err != nil {
					return nil, err
				}
				r, err := c.Space.Client.Key(ctx, a.Key)
				if err != nil {
					return nil, err
				}
				return &Result{Text: "pressed " + r.Key, Structured: r}, nil
			},
		},
	}
}
