package a11y

import (
	"context"
	"errors"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/trycua/cua-spacesd/api"
)

// maxA11yNodes bounds max_nodes.
const maxA11yNodes = 50000

// frameMatchSlack is how far (pixels, summed over x, y, width, height) a
// frame's extents may be from the X window's bounds and still match it:
// toolkits report the frame with or without decorations.
const frameMatchSlack = 128

// Tree answers the accessibility tree of a window, flattened in pre-order.
func (a *A11y) Tree(ctx context.Context, req api.A11yTreeRequest) (*api.A11yTree, error) {
	if req.MaxDepth < 0 || req.MaxNodes < 0 || req.MaxNodes > maxA11yNodes {
		return nil, api.Errorf(api.KindInvalidArgument, "max_depth must be >= 0 and max_nodes in 0..%d (got %d, %d)", maxA11yNodes, req.MaxDepth, req.MaxNodes)
	}
	if req.MaxNodes == 0 {
		req.MaxNodes = api.DefaultA11yMaxNodes
	}
	w, err := a.walkWindow(ctx, req)
	if err != nil {
		return nil, err
	}
	return &api.A11yTree{WindowID: w.windowID, Nodes: w.nodes, Truncated: w.truncated}, nil
}

// walker is one walk of a window's tree.
type walker struct {
	c        *dbus.Conn
	gen      uint64
	req      api.A11yTreeRequest
	windowID uint32
	nodes    []api.A11yNode
	set      map[ref]entry
	hung     map[string]bool
	// truncated says a bound cut the walk.
	truncated bool
}

func (a *A11y) walkWindow(ctx context.Context, req api.A11yTreeRequest) (*walker, error) {
	ctx, cancel := context.WithTimeout(ctx, walkTimeout)
	defer cancel()
	c, err := a.bus(ctx)
	if err != nil {
		return nil, err
	}
	frame, winID, err := a.frameOf(ctx, c, req.WindowID)
	if err != nil {
		return nil, err
	}
	w := &walker{c: c, gen: a.snaps.begin(), req: req, windowID: winID, set: map[ref]entry{}, hung: map[string]bool{}}
	w.walk(ctx, frame, ref{}, "", 0, 0)
	a.snaps.commit(w.gen, w.set)
	return w, nil
}

// walk visits r and its subtree in pre-order.
func (w *walker) walk(ctx context.Context, r, parent ref, parentID string, depth, index int) {
	if len(w.nodes) >= w.req.MaxNodes || ctx.Err() != nil {
		w.truncated = true
		return
	}
	if _, seen := w.set[r]; seen || w.hung[r.Bus] {
		// An element twice (a toolkit's cycle) is walked once.
		return
	}
	id := encodeID(w.gen, r)
	wantKids := w.req.MaxDepth == 0 || depth < w.req.MaxDepth
	n, err := readNode(ctx, w.c, r, wantKids)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			w.truncated = true
			return
		}
		e := api.AsError(connErr(ctx, "read "+string(r.Path)+" of "+r.Bus, err))
		if e.Kind == api.KindTimeout {
			// A hung application is one node: the rest of its tree
			// would cost a timeout per element.
			w.hung[r.Bus] = true
		}
		w.set[r] = entry{parent: parent, index: index}
		w.nodes = append(w.nodes, api.A11yNode{ID: id, Parent: parentID, Role: api.A11yRoleOther, Error: e})
		return
	}
	if depth > 0 && !w.req.IncludeHidden && !hasState(n.States, api.A11yStateShowing) && !hasState(n.States, api.A11yStateVisible) {
		return
	}
	w.set[r] = entry{parent: parent, index: index}
	w.nodes = append(w.nodes, api.A11yNode{
		ID: id, Parent: parentID, Role: normalRole(n.RoleName), RawRole: n.RoleName,
		Name: n.Name, Description: n.Description, Value: n.Value, States: n.States,
		Bounds: n.Bounds, Actions: n.Actions,
	})
	if !wantKids {
		if n.ChildCount > 0 {
			w.truncated = true
		}
		return
	}
	for i, k := range n.Children {
		w.walk(ctx, k, r, id, depth+1, i)
	}
}

// frameOf finds the accessible frame of X window id (0 = the focused
// one): the frame of an application of the window's process whose name
// is the window's title and whose extents are its bounds.
func (a *A11y) frameOf(ctx context.Context, c *dbus.Conn, id uint32) (ref, uint32, error) {
	var xwin *api.Window
	if a.desk != nil {
		if id != 0 {
			w, err := a.desk.Window(ctx, id)
			if err != nil {
				return ref{}, 0, err
			}
			xwin = &w
		} else if ws, err := a.desk.Windows(ctx, ""); err == nil {
			for i := range ws {
				if ws[i].Focused {
					xwin = &ws[i]
				}
			}
		}
	} else if id != 0 {
		return ref{}, 0, api.Errorf(api.KindInvalidArgument, "window %d: this Space has no display to map window ids; ask window_id 0 for the focused window", id)
	}
	var apps []struct {
		Bus  string
		Path dbus.ObjectPath
	}
	if err := call(ctx, c, ref{registryName, rootPath}, ifaceAccessible, "GetChildren", []any{&apps}); err != nil {
		return ref{}, 0, connErr(ctx, "list the accessible applications", err)
	}
	type candidate struct {
		r     ref
		score int
	}
	var best candidate
	// hung is an application of the window's process that did not answer:
	// its tree is then one node with error timeout.
	var hung ref
	samePID := func(bus string) bool {
		if xwin == nil || xwin.PID == 0 {
			return true
		}
		var pid uint32
		err := call(ctx, c, ref{"org.freedesktop.DBus", "/org/freedesktop/DBus"}, "org.freedesktop.DBus", "GetConnectionUnixProcessID", []any{&pid}, bus)
		return err == nil && int(pid) == xwin.PID
	}
	for pass := 0; pass < 2 && best.r.Bus == "" && hung.Bus == ""; pass++ {
		for _, app := range apps {
			ar := ref{app.Bus, app.Path}
			if !ar.valid() || (pass == 0 && !samePID(app.Bus)) {
				continue
			}
			var frames []struct {
				Bus  string
				Path dbus.ObjectPath
			}
			if err := call(ctx, c, ar, ifaceAccessible, "GetChildren", []any{&frames}); err != nil {
				if pass == 0 && xwin != nil && xwin.PID != 0 && api.KindOf(connErr(ctx, "", err)) == api.KindTimeout {
					hung = ar
				}
				continue // a hung or gone application is not the window
			}
			for _, f := range frames {
				fr := ref{f.Bus, f.Path}
				if !fr.valid() {
					continue
				}
				n, err := readNode(ctx, c, fr, false)
				if err != nil {
					continue
				}
				if s := frameScore(n, xwin); s > best.score {
					best = candidate{fr, s}
				}
			}
		}
	}
	if best.r.Bus == "" && hung.Bus != "" {
		best.r = hung
	}
	if best.r.Bus == "" {
		if id == 0 && xwin == nil {
			return ref{}, 0, api.Errorf(api.KindNotFound, "no focused window with an accessibility tree; activate one, or ask by window_id")
		}
		win := id
		if xwin != nil {
			win = xwin.WindowID
		}
		return ref{}, 0, api.Errorf(api.KindNotFound, "window %d has no accessibility tree: its application is not on the accessibility bus (GTK needs GTK_MODULES=gail:atk-bridge, Qt QT_ACCESSIBILITY=1)", win)
	}
	if xwin != nil {
		return best.r, xwin.WindowID, nil
	}
	return best.r, 0, nil
}

// frameScore says how well frame n matches X window xwin (nil: the
// focused window, which X did not name); 0 = not at all.
func frameScore(n *rawNode, xwin *api.Window) int {
	active := hasState(n.States, api.A11yStateActive)
	if xwin == nil {
		if active {
			return 1
		}
		return 0
	}
	s := 0
	if n.Name != "" && n.Name == xwin.Title {
		s += 4
	} else if n.Name != "" && xwin.Title != "" && strings.Contains(xwin.Title, n.Name) {
		s += 2
	}
	b, x := n.Bounds, xwin.Bounds
	if abs(b.X-x.X)+abs(b.Y-x.Y)+abs(b.Width-x.Width)+abs(b.Height-x.Height) <= frameMatchSlack {
		s += 3
	}
	if active && xwin.Focused {
		s++
	}
	if s < 3 {
		// Only focus in common: not this window.
		return 0
	}
	return s
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
