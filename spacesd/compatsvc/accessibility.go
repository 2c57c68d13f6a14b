package compatsvc

import (
	"context"

	"github.com/trycua/cua-spacesd/api"
)

// get_accessibility_tree answers what X11 can honestly give: the desktop
// and its top-level windows with their titles, apps, pids and bounds. X11
// has no accessibility API of its own (AT-SPI lives in each toolkit, on a
// session bus a Space may not run), so there are no widgets below the
// windows: each window's children is empty. docs/computer-server.md says
// so too.

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
	Children []node `json:"children"`
}

func nodeOf(role, title string, b api.Rect) node {
	return node{Role: role, Title: title, Bounds: b, Position: position{b.X, b.Y}, Size: sizeOf{b.Width, b.Height}, Children: []node{}}
}

type treeResult struct {
	Tree node `json:"tree"`
	// Source says where the tree comes from, for a reader who expects
	// widgets: "x11-windows" (top-level windows only).
	Source string `json:"source"`
}

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
	for _, w := range list {
		n := nodeOf("window", w.Title, w.Bounds)
		n.WindowID, n.AppName, n.PID, n.Focused = w.WindowID, w.AppName, w.PID, w.Focused
		root.Children = append(root.Children, n)
	}
	return treeResult{Tree: root, Source: "x11-windows"}, nil
}
