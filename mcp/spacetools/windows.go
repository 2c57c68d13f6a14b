package spacetools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// WindowList is the structured answer of list_space_windows.
type WindowList struct {
	Windows []api.Window `json:"windows"`
}

func listSpaceWindowsTool() *Tool {
	return &Tool{
		Name:        "list_space_windows",
		Title:       "List the windows",
		Hints:       mcpserve.Hints{ReadOnly: true},
		Output:      OutputOf[WindowList](),
		Description: "List the windows on a Space's desktop with title, app, pid, bounds and focus; filter by app name substring.",
		Schema: Object(nil, map[string]*jsonschema.Schema{
			"app_name": Str("Only windows whose app name contains this (case-insensitive)."),
		}),
		Requires: []api.Feature{api.FeatureWindows},
		Result:   "{windows: [{window_id, title, app_name, pid, bounds, focused}]}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				AppName string `json:"app_name"`
			}
			if err := Decode(c, "list_space_windows", &a); err != nil {
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
			return &mcpserve.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: WindowList{Windows: ws}}, nil
		},
	}
}

func focusSpaceWindowTool() *Tool {
	return &Tool{
		Name:        "focus_space_window",
		Title:       "Focus a window",
		Hints:       mcpserve.Hints{Idempotent: true},
		Output:      OutputOf[api.Window](),
		Description: "Raise and focus a window on a Space's desktop.",
		Schema: Object([]string{"window_id"}, map[string]*jsonschema.Schema{
			"window_id": Integer("The window (from list_space_windows).", 1, 0, nil),
		}),
		Requires: []api.Feature{api.FeatureWindows},
		Errors:   []api.Kind{api.KindNotFound},
		Result:   "the focused window {window_id, title, app_name, pid, bounds, focused}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				WindowID uint32 `json:"window_id"`
			}
			if err := Decode(c, "focus_space_window", &a); err != nil {
				return nil, err
			}
			w, err := c.Space.Client.ActivateWindow(ctx, a.WindowID)
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: fmt.Sprintf("focused window %d (%s: %s)", w.WindowID, w.AppName, w.Title), Structured: w}, nil
		},
	}
}

// Window actions of space_window.
const (
	actionClose    = "close"
	actionMove     = "move"
	actionResize   = "resize"
	actionMinimize = "minimize"
	actionMaximize = "maximize"
	actionRestore  = "restore"
)

// Bounds of space_window's close: an app asked to close may take a moment,
// or ask its user to confirm (then the window stays, and the answer says so).
const (
	closeWait = 3 * time.Second
	closePoll = 50 * time.Millisecond
)

// WindowAction is the structured answer of space_window.
type WindowAction struct {
	Action string `json:"action"`
	// Window is the window afterwards (for close: as it was last seen).
	Window api.Window `json:"window"`
	// Closed, for close: the window is gone from the desktop.
	Closed bool `json:"closed,omitempty"`
}

// windowStates are the states minimize, maximize and restore ask for.
var windowStates = map[string]api.WindowState{
	actionMinimize: api.WindowMinimized, actionMaximize: api.WindowMaximized, actionRestore: api.WindowNormal,
}

func spaceWindowTool() *Tool {
	return &Tool{
		Name:   "space_window",
		Title:  "Close, move, resize, minimize or maximize a window",
		Hints:  mcpserve.Hints{Destructive: true},
		Output: OutputOf[WindowAction](),
		Description: "Act on a window of a Space's desktop as its title bar would: close it (as its close button does: the app may ask to confirm), " +
			"move it (x, y), resize it (width, height), minimize, maximize, or restore it from either. " +
			"Answers the window afterwards with its bounds (content, without the frame) and state.",
		Schema: Object([]string{"window_id", "action"}, map[string]*jsonschema.Schema{
			"window_id": Integer("The window (from list_space_windows).", 1, 0, nil),
			"action":    Enum("What to do.", "", actionClose, actionMove, actionResize, actionMinimize, actionMaximize, actionRestore),
			"x":         {Type: "integer", Description: "move: the content's new left edge, in screen pixels."},
			"y":         {Type: "integer", Description: "move: the content's new top edge, in screen pixels."},
			"width":     Integer("resize: the content's new width, in pixels.", 1, 0, nil),
			"height":    Integer("resize: the content's new height, in pixels.", 1, 0, nil),
		}),
		Requires: []api.Feature{api.FeatureWindows},
		Errors:   []api.Kind{api.KindNotFound, api.KindTimeout},
		Result:   "{action, window: {window_id, title, app_name, pid, bounds, focused, state}, closed}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				WindowID uint32 `json:"window_id"`
				Action   string `json:"action"`
				X        *int   `json:"x"`
				Y        *int   `json:"y"`
				Width    *int   `json:"width"`
				Height   *int   `json:"height"`
			}
			if err := Decode(c, "space_window", &a); err != nil {
				return nil, err
			}
			if err := windowArgsFit(a.Action, a.X != nil, a.Y != nil, a.Width != nil, a.Height != nil); err != nil {
				return nil, err
			}
			cl := c.Space.Client
			var w *api.Window
			var err error
			switch a.Action {
			case actionClose:
				return closeWindow(ctx, c, a.WindowID)
			case actionMove:
				w, err = cl.SetWindowGeometry(ctx, a.WindowID, api.GeometryRequest{X: a.X, Y: a.Y})
			case actionResize:
				w, err = cl.SetWindowGeometry(ctx, a.WindowID, api.GeometryRequest{Width: a.Width, Height: a.Height})
			default:
				w, err = cl.SetWindowState(ctx, a.WindowID, windowStates[a.Action])
			}
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("window %d (%s: %q) is %dx%d at %d,%d", w.WindowID, w.AppName, w.Title,
				w.Bounds.Width, w.Bounds.Height, w.Bounds.X, w.Bounds.Y)
			if w.State != "" {
				text += ", " + string(w.State)
			}
			return &mcpserve.Result{Text: text, Structured: WindowAction{Action: a.Action, Window: *w}}, nil
		},
	}
}

// windowArgsFit checks that the coordinates given are those the action
// takes: a stray width on a move is a mistake worth naming, not ignoring.
func windowArgsFit(action string, x, y, width, height bool) error {
	need := map[string][2]bool{actionMove: {x, y}, actionResize: {width, height}}
	names := map[string]string{actionMove: "x and y", actionResize: "width and height"}
	for act, given := range need {
		if act == action && (!given[0] || !given[1]) {
			return api.Errorf(api.KindInvalidArgument, "space_window: %s needs %s", action, names[act])
		}
		if act != action && (given[0] || given[1]) {
			return api.Errorf(api.KindInvalidArgument, "space_window: %s are for %s, not %s", names[act], act, action)
		}
	}
	return nil
}

// closeWindow asks the window to close and waits a little for it to go, so
// that the answer says whether it did.
func closeWindow(ctx context.Context, c *Call, id uint32) (*mcpserve.Result, error) {
	cl := c.Space.Client
	last, err := findWindow(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if err := cl.CloseWindow(ctx, id); err != nil {
		return nil, err
	}
	t := time.NewTicker(closePoll)
	defer t.Stop()
	deadline := time.Now().Add(closeWait)
	for {
		w, err := findWindow(ctx, c, id)
		if api.KindOf(err) == api.KindNotFound {
			return &mcpserve.Result{
				Text:       fmt.Sprintf("closed window %d (%s: %q)", id, last.AppName, last.Title),
				Structured: WindowAction{Action: actionClose, Window: last, Closed: true},
			}, nil
		}
		if err != nil {
			return nil, err
		}
		last = w
		if time.Now().After(deadline) {
			return &mcpserve.Result{
				Text: fmt.Sprintf("asked window %d (%s: %q) to close; after %s it is still open: the app may be asking to confirm (take a screenshot)",
					id, last.AppName, last.Title, closeWait),
				Structured: WindowAction{Action: actionClose, Window: last},
			}, nil
		}
		select {
		case <-ctx.Done():
			return nil, api.Errorf(api.KindCancelled, "space_window: cancelled while window %d closes: %v", id, ctx.Err())
		case <-t.C:
		}
	}
}

// findWindow describes one window, or answers not_found.
func findWindow(ctx context.Context, c *Call, id uint32) (api.Window, error) {
	ws, err := c.Space.Client.Windows(ctx, "")
	if err != nil {
		return api.Window{}, err
	}
	for _, w := range ws {
		if w.WindowID == id {
			return w, nil
		}
	}
	return api.Window{}, api.Errorf(api.KindNotFound, "no window %d on the desktop of %s; list_space_windows lists them", id, c.Space.ID)
}
