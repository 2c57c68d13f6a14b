package spacetools

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

func spaceAccessibilityTreeTool() *Tool {
	return &Tool{
		Name:   "space_accessibility_tree",
		Title:  "Read a window's widgets",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: OutputOf[api.A11yTree](),
		Description: "Read the accessibility tree (AT-SPI) of a window of a Space's desktop, or of the focused one: every widget with its role, " +
			"name, value, states, bounds in screenshot pixels and the actions it offers, and an id that space_element_action takes. " +
			"The text is an indented outline; the structured answer has the nodes in pre-order. Ids name this snapshot: after the UI " +
			"changed, take the tree again.",
		Schema: Object(nil, map[string]*jsonschema.Schema{
			"window_id":      Integer("The window (from list_space_windows); 0 or absent: the focused window.", 0, 0, nil),
			"max_depth":      Integer("Levels below the window to read (0: all).", 0, 0, nil),
			"max_nodes":      Integer("The most nodes to answer.", 1, api.MaxA11yNodes, api.DefaultA11yMaxNodes),
			"include_hidden": Boolean("Also the widgets that are not showing.", false),
		}),
		Requires: []api.Feature{api.FeatureA11y},
		Errors:   []api.Kind{api.KindNotFound, api.KindTimeout},
		Result:   "{window_id, nodes: [{id, parent?, role, raw_role?, name?, description?, value?, states?, bounds, actions?, error?}], truncated?}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a api.A11yTreeRequest
			if err := Decode(c, "space_accessibility_tree", &a); err != nil {
				return nil, err
			}
			t, err := c.Space.Client.A11yTree(ctx, a)
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: A11yOutline(t), Structured: t}, nil
		},
	}
}

// A11yFound is the structured answer of space_find_element.
type A11yFound struct {
	Elements []api.A11yFound `json:"elements"`
}

func spaceFindElementTool() *Tool {
	return &Tool{
		Name:   "space_find_element",
		Title:  "Find widgets",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: OutputOf[A11yFound](),
		Description: "Find widgets of a window of a Space's desktop (or the focused one) in its accessibility tree, by role, name, " +
			"parts of the name or value, and states; every field given must match. Answers at most 50, each with its id (for " +
			"space_element_action), bounds and path from the window.",
		Schema: Object(nil, map[string]*jsonschema.Schema{
			"window_id":      Integer("The window (from list_space_windows); 0 or absent: the focused window.", 0, 0, nil),
			"role":           Enum("The widget's role.", "", api.A11yRoles...),
			"name":           Str("The whole name (case-insensitive)."),
			"name_contains":  Str("A part of the name (case-insensitive)."),
			"value_contains": Str("A part of the value or text (case-insensitive)."),
			"states":         {Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: "States the widget must all have (focused, enabled, checked, selected, expanded, editable, showing...)."},
		}),
		Requires: []api.Feature{api.FeatureA11y},
		Errors:   []api.Kind{api.KindNotFound, api.KindTimeout},
		Result:   "{elements: [{node: {id, role, name?, value?, states?, bounds, actions?}, path: [...]}]}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var q api.A11yQuery
			if err := Decode(c, "space_find_element", &q); err != nil {
				return nil, err
			}
			found, err := c.Space.Client.A11yFind(ctx, q)
			if err != nil {
				return nil, err
			}
			if found == nil {
				found = []api.A11yFound{}
			}
			var b strings.Builder
			for _, f := range found {
				fmt.Fprintf(&b, "%s  (in %s)\n", nodeLine(f.Node), strings.Join(f.Path, " > "))
			}
			if len(found) == 0 {
				b.WriteString("no element matches")
			}
			return &mcpserve.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: A11yFound{Elements: found}}, nil
		},
	}
}

func spaceElementActionTool() *Tool {
	return &Tool{
		Name:  "space_element_action",
		Title: "Act on a widget",
		Hints: mcpserve.Hints{},
		Description: "Act on a widget found by space_accessibility_tree or space_find_element, by its toolkit's own action (AT-SPI), " +
			"with no synthetic input: press, focus, set_value (value: the text or number), select, expand, collapse, scroll_into_view. " +
			"A widget without that action answers precondition_failed naming the actions it has; an id from an older tree answers " +
			"precondition_failed: take the tree again.",
		Schema: Object([]string{"id", "action"}, map[string]*jsonschema.Schema{
			"id":     Str("The widget's id from the tree or a find."),
			"action": Enum("What to do.", "", api.A11yActions...),
			"value":  Str("The text or number of set_value."),
		}),
		Requires: []api.Feature{api.FeatureA11y},
		Errors:   []api.Kind{api.KindPreconditionFailed, api.KindInvalidArgument},
		Result:   "text: what was done",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a api.A11yAction
			if err := Decode(c, "space_element_action", &a); err != nil {
				return nil, err
			}
			if err := c.Space.Client.A11yAct(ctx, a); err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: "done: " + a.Action}, nil
		},
	}
}

// A11yOutline is a tree as an indented outline a reader follows within
// its context: one line a node (role, name, value, states, bounds, id).
func A11yOutline(t *api.A11yTree) string {
	depth := make(map[string]int, len(t.Nodes))
	var b strings.Builder
	fmt.Fprintf(&b, "window %d, %d nodes", t.WindowID, len(t.Nodes))
	if t.Truncated {
		b.WriteString(" (truncated: raise max_nodes or max_depth)")
	}
	b.WriteString("\n")
	for _, n := range t.Nodes {
		d := 0
		if n.Parent != "" {
			d = depth[n.Parent] + 1
		}
		depth[n.ID] = d
		b.WriteString(strings.Repeat("  ", d))
		b.WriteString(nodeLine(n))
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// nodeLine is one node: role "name" = value [states] WxH+X+Y id.
func nodeLine(n api.A11yNode) string {
	var b strings.Builder
	b.WriteString(n.Role)
	if n.Name != "" {
		fmt.Fprintf(&b, " %q", n.Name)
	}
	if n.Value != "" {
		v := n.Value
		if len(v) > 80 {
			v = v[:80] + "…"
		}
		fmt.Fprintf(&b, " = %q", v)
	}
	if len(n.States) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(n.States, " "))
	}
	if len(n.Actions) > 0 {
		fmt.Fprintf(&b, " actions: %s", strings.Join(n.Actions, ","))
	}
	fmt.Fprintf(&b, " %dx%d+%d+%d id=%s", n.Bounds.Width, n.Bounds.Height, n.Bounds.X, n.Bounds.Y, n.ID)
	if n.Error != nil {
		fmt.Fprintf(&b, " (unread: %s)", n.Error.Kind)
	}
	return b.String()
}
