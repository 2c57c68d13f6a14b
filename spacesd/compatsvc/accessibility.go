package compatsvc

import (
	"context"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// get_accessibility_tree answers the desktop and its top-level windows
// with their titles, apps, pids and bounds, and below each window its
// widgets as AT-SPI has them (capabilities/a11y, the code of the a11y
// routes) when the Space has an accessibility bus and the window's app
// exposes a tree; without one, the windows alone ("x11-windows"). find_element
// searches the same trees.

// node is one node of the tree. bounds is the @trycua/computer shape;
// position and size are computer-server's Linux shape; both are given.
type node struct {
	Role     string   `json:"role"`
	Title    string   `json:"title"`
	Bounds   api.Rect `json:"bounds"`
	Position position `json:"position"`
	Size     sizeOf   `json:"size"`
	// Window fields (role "window" only).
	WindowID uint32 `json:"window_id,omitempty"`
	AppName  string `json:"app_name,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Focused  bool   `json:"focused,omitempty"`
	// Widget fields (from AT-SPI): the id space_element_action and the
	// a11y routes take, the toolkit's role, value, states and actions.
	ID       string   `json:"id,omitempty"`
	RawRole  string   `json:"raw_role,omitempty"`
	Value    string   `json:"value,omitempty"`
	States   []string `json:"states,omitempty"`
	Actions  []string `json:"actions,omitempty"`
	Children []node   `json:"children"`
}

func nodeOf(role, title string, b api.Rect) node {
	return node{Role: role, Title: title, Bounds: b, Position: position{b.X, b.Y}, Size: sizeOf{b.Width, b.Height}, Children: []node{}}
}

type treeResult struct {
	Tree node `json:"tree"`
	// Source says where the tree comes from, for a reader who expects
	// widgets: "at-spi" (windows and their widgets), or "x11-windows"
	// (top-level windows only: no accessibility bus, or no app on it).
	Source string `json:"source"`
}

// Bounds of the widgets of one tree answer: per window, and the time of
// the whole walk (each window's is the capability's own bound).
const (
	compatTreeNodes   = 2000
	compatTreeTimeout = 10 * time.Second
)

func accessibilityTree(ctx context.Context, c *conn, _ none) (any, error) {
	size, err := c.svc.desk.ScreenSize(ctx)
	if err != nil {
		return nil, err
	}
	list, err := c.svc.desk.Windows(ctx, "")
	if err != nil {
		return nil, err
	}
	root := nodeOf("desktop", c.svc.desk.Display(), api.Rect{Width: size.Width, Height: size.Height})
	source := "x11-windows"
	widgets := c.svc.a11y != nil && c.svc.a11y.Status(ctx).Supported
	ctx, cancel := context.WithTimeout(ctx, compatTreeTimeout)
	defer cancel()
	for _, w := range list {
		n := nodeOf("window", w.Title, w.Bounds)
		n.WindowID, n.AppName, n.PID, n.Focused = w.WindowID, w.AppName, w.PID, w.Focused
		if widgets && ctx.Err() == nil {
			// A window whose app exposes no tree keeps no children.
			if t, err := c.svc.a11y.Tree(ctx, api.A11yTreeRequest{WindowID: w.WindowID, MaxNodes: compatTreeNodes}); err == nil && len(t.Nodes) > 0 {
				n.Children = nested(t.Nodes)
				source = "at-spi"
			}
		}
		root.Children = append(root.Children, n)
	}
	return treeResult{Tree: root, Source: source}, nil
}

// nested turns a pre-order tree (its first node the window's frame) into
// the frame's children, nested as computer-server's clients read them.
func nested(nodes []api.A11yNode) []node {
	index := make(map[string]int, len(nodes))
	all := make([]node, len(nodes))
	for i, a := range nodes {
		n := nodeOf(a.Role, a.Name, a.Bounds)
		n.ID, n.RawRole, n.Value, n.States, n.Actions = a.ID, a.RawRole, a.Value, a.States, a.Actions
		all[i] = n
		index[a.ID] = i
	}
	// Children are attached from the last node back, so that each
	// subtree is whole when its parent takes it.
	for i := len(nodes) - 1; i > 0; i-- {
		if p, ok := index[nodes[i].Parent]; ok {
			all[p].Children = append([]node{all[i]}, all[p].Children...)
		}
	}
	return all[0].Children
}

// findParams are find_element's: the role (ours or the toolkit's), a part
// of the title (the name) and of the value, in the focused window, or in
// window_id.
type findParams struct {
	Role     string `json:"role"`
	Title    string `json:"title"`
	Value    string `json:"value"`
	WindowID uint32 `json:"window_id"`
}

func findElement(ctx context.Context, c *conn, p findParams) (any, error) {
	if c.svc.a11y == nil {
		return nil, api.CapabilityMissing(api.FeatureA11y, "this daemon reads no accessibility tree")
	}
	if st := c.svc.a11y.Status(ctx); !st.Supported {
		return nil, api.CapabilityMissing(api.FeatureA11y, st.Limitation)
	}
	found, err := c.svc.a11y.Find(ctx, api.A11yQuery{WindowID: p.WindowID, Role: p.Role, NameContains: p.Title, ValueContains: p.Value})
	if err != nil {
		return nil, err
	}
	elements := make([]node, 0, len(found))
	for _, f := range found {
		n := nodeOf(f.Node.Role, f.Node.Name, f.Node.Bounds)
		n.ID, n.RawRole, n.Value, n.States, n.Actions = f.Node.ID, f.Node.RawRole, f.Node.Value, f.Node.States, f.Node.Actions
		elements = append(elements, n)
	}
	res := map[string]any{"elements": elements, "found": len(elements) > 0}
	if len(elements) > 0 {
		res["element"] = elements[0]
	}
	return res, nil
}
