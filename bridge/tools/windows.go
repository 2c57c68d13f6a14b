package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
)

// WindowList is the structured answer of list_space_windows.
type WindowList struct {
	Windows []api.Window `json:"windows"`
}

func listSpaceWindowsTool() *Tool {
	return &Tool{
		Name:        "list_space_windows",
		Title:       "List the windows",
		Hints:       Hints{ReadOnly: true},
		Output:      outputOf[WindowList](),
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
			return &Result{Text: strings.TrimRight(b.String(), "\n"), Structured: WindowList{Windows: ws}}, nil
		},
	}
}

func focusSpaceWindowTool() *Tool {
	return &Tool{
		Name:        "focus_space_window",
		Title:       "Focus a window",
		Hints:       Hints{Idempotent: true},
		Output:      outputOf[api.Window](),
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
	}
}
