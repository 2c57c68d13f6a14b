package spacetools

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

func spaceTypeTool() *Tool {
	return &Tool{
		Name:        "space_type",
		Title:       "Type text",
		Hints:       mcpserve.Hints{Destructive: true},
		Output:      OutputOf[api.InputResult](),
		Description: "Type Unicode text into the focused window of a Space's desktop (characters without a key in the layout work too).",
		Schema: Object([]string{"text"}, map[string]*jsonschema.Schema{
			"text": NonEmpty("The text: at most the Space's limits.max_type_chars characters (see space_capabilities)."),
		}),
		Requires: []api.Feature{api.FeatureInput},
		Result:   "{chars} typed",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct{ Text string }
			if err := Decode(c, "space_type", &a); err != nil {
				return nil, err
			}
			r, err := c.Space.Client.Type(ctx, a.Text)
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: fmt.Sprintf("typed %d characters", r.Chars), Structured: r}, nil
		},
	}
}

func spacePressKeyTool() *Tool {
	return &Tool{
		Name:        "space_press_key",
		Title:       "Press a key",
		Hints:       mcpserve.Hints{Destructive: true},
		Output:      OutputOf[api.InputResult](),
		Description: "Press a key or hotkey on a Space's desktop: X keysym names joined by '+', e.g. Return, Escape, ctrl+shift+t.",
		Schema: Object([]string{"key"}, map[string]*jsonschema.Schema{
			"key": NonEmpty("The key or hotkey (e.g. Return, ctrl+c, alt+F4)."),
		}),
		Requires: []api.Feature{api.FeatureInput},
		Result:   "{key} pressed",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct{ Key string }
			if err := Decode(c, "space_press_key", &a); err != nil {
				return nil, err
			}
			r, err := c.Space.Client.Key(ctx, a.Key)
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: "pressed " + r.Key, Structured: r}, nil
		},
	}
}
