package spacetools

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// The pointer tools pass their values through: the bounds (clicks, wheel
// clicks) are the Space's, enforced there and read from its capabilities'
// limits, so the bridge keeps no copy that could disagree.

// pointerProps adds the coordinate options every pointer tool takes: the
// coordinates of a (scaled) screenshot go in unchanged with its scale and
// window, and the Space maps them to the screen.
func pointerProps(props map[string]*jsonschema.Schema) map[string]*jsonschema.Schema {
	props["scale"] = Number("The scale of the screenshot the coordinates come from (its {scale}); default 1.")
	props["window_id"] = Integer("The window the screenshot showed, when the coordinates are relative to it.", 0, 0, nil)
	return props
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

func spaceClickTool() *Tool {
	return &Tool{
		Name:        "space_click",
		Title:       "Click",
		Hints:       mcpserve.Hints{Destructive: true},
		Output:      OutputOf[api.InputResult](),
		Description: "Click at a point on a Space's desktop (left, middle or right; count 2 double-clicks).",
		Schema: Object([]string{"x", "y"}, pointerProps(map[string]*jsonschema.Schema{
			"x":      Number("X in screenshot coordinates."),
			"y":      Number("Y in screenshot coordinates."),
			"button": Enum("Mouse button.", api.ButtonLeft, api.ButtonLeft, api.ButtonMiddle, api.ButtonRight),
			"count":  Integer("Clicks (2 = double-click); at most the Space's limits.max_click_count (see space_capabilities).", 1, 0, 1),
		})),
		Requires: []api.Feature{api.FeatureInput},
		Result:   "what was delivered: {x, y, button, count} in screen pixels",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				X, Y   float64
				Button string
				Count  int
				pointerArgs
			}
			if err := Decode(c, "space_click", &a); err != nil {
				return nil, err
			}
			r, err := c.Space.Client.Click(ctx, api.ClickRequest{X: a.X, Y: a.Y, Button: a.Button, Count: a.Count, Pointer: a.pointer()})
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: inputText("clicked", r), Structured: r}, nil
		},
	}
}

func spaceMoveMouseTool() *Tool {
	return &Tool{
		Name:        "space_move_mouse",
		Title:       "Move the pointer",
		Hints:       mcpserve.Hints{Idempotent: true},
		Output:      OutputOf[api.InputResult](),
		Description: "Move the pointer on a Space's desktop.",
		Schema: Object([]string{"x", "y"}, pointerProps(map[string]*jsonschema.Schema{
			"x": Number("X in screenshot coordinates."),
			"y": Number("Y in screenshot coordinates."),
		})),
		Requires: []api.Feature{api.FeatureInput},
		Result:   "what was delivered: {x, y} in screen pixels",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				X, Y float64
				pointerArgs
			}
			if err := Decode(c, "space_move_mouse", &a); err != nil {
				return nil, err
			}
			r, err := c.Space.Client.MoveMouse(ctx, api.MouseMoveRequest{X: a.X, Y: a.Y, Pointer: a.pointer()})
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: inputText("moved", r), Structured: r}, nil
		},
	}
}

func spaceDragTool() *Tool {
	return &Tool{
		Name:        "space_drag",
		Title:       "Drag",
		Hints:       mcpserve.Hints{Destructive: true},
		Output:      OutputOf[api.InputResult](),
		Description: "Press a button at one point, move to another and release, on a Space's desktop.",
		Schema: Object([]string{"from_x", "from_y", "to_x", "to_y"}, pointerProps(map[string]*jsonschema.Schema{
			"from_x": Number("Start X in screenshot coordinates."),
			"from_y": Number("Start Y."),
			"to_x":   Number("End X."),
			"to_y":   Number("End Y."),
			"button": Enum("Mouse button.", api.ButtonLeft, api.ButtonLeft, api.ButtonMiddle, api.ButtonRight),
		})),
		Requires: []api.Feature{api.FeatureInput},
		Result:   "what was delivered: {x, y, button} (the end point) in screen pixels",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				FromX  float64 `json:"from_x"`
				FromY  float64 `json:"from_y"`
				ToX    float64 `json:"to_x"`
				ToY    float64 `json:"to_y"`
				Button string  `json:"button"`
				pointerArgs
			}
			if err := Decode(c, "space_drag", &a); err != nil {
				return nil, err
			}
			r, err := c.Space.Client.Drag(ctx, api.DragRequest{FromX: a.FromX, FromY: a.FromY, ToX: a.ToX, ToY: a.ToY, Button: a.Button, Pointer: a.pointer()})
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: inputText("dragged", r), Structured: r}, nil
		},
	}
}

func spaceScrollTool() *Tool {
	return &Tool{
		Name:        "space_scroll",
		Title:       "Scroll",
		Hints:       mcpserve.Hints{},
		Output:      OutputOf[api.InputResult](),
		Description: "Turn the mouse wheel on a Space's desktop, at a point or where the pointer is (dy > 0 scrolls down).",
		Schema: Object(nil, pointerProps(map[string]*jsonschema.Schema{
			"x":  Number("X in screenshot coordinates (default: where the pointer is)."),
			"y":  Number("Y in screenshot coordinates."),
			"dx": SignedInteger("Horizontal wheel clicks (> 0 right); at most the Space's limits.max_scroll_clicks either way.", 0),
			"dy": SignedInteger("Vertical wheel clicks (> 0 down); at most the Space's limits.max_scroll_clicks either way.", 0),
		})),
		Requires: []api.Feature{api.FeatureInput},
		Result:   "what was delivered: {x, y} in screen pixels",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				X, Y   *float64
				DX, DY int
				pointerArgs
			}
			if err := Decode(c, "space_scroll", &a); err != nil {
				return nil, err
			}
			r, err := c.Space.Client.Scroll(ctx, api.ScrollRequest{X: a.X, Y: a.Y, DX: a.DX, DY: a.DY, Pointer: a.pointer()})
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: inputText("scrolled", r), Structured: r}, nil
		},
	}
}
