package a11y_test

import (
	"context"
	"errors"
	"image"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ytest"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
)

// session starts an environment with the GTK program and an A11y on it.
func session(t *testing.T, opts a11ytest.Options) (*a11ytest.Env, *a11ytest.App, *a11y.A11y) {
	t.Helper()
	env := a11ytest.Start(t, opts)
	app := env.StartApp(t)
	a := a11y.New(a11y.Options{Display: env.Display, SessionBusAddress: env.SessionBus})
	t.Cleanup(a.Close)
	return env, app, a
}

// tree reads the window's tree once it holds the widgets: the toolkit
// registers them on the bus a moment after the window maps.
func tree(t *testing.T, a *a11y.A11y, windowID uint32) *api.A11yTree {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr, err := a.Tree(t.Context(), api.A11yTreeRequest{WindowID: windowID})
		if err == nil && find(tr, api.A11yRoleCheckBox, "Agree") != nil {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("tree of window %d: %+v, %v", windowID, tr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func find(tr *api.A11yTree, role, name string) *api.A11yNode {
	for i := range tr.Nodes {
		if tr.Nodes[i].Role == role && tr.Nodes[i].Name == name {
			return &tr.Nodes[i]
		}
	}
	return nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func inside(in, out api.Rect) bool {
	return in.Width > 0 && in.Height > 0 && in.X >= out.X && in.Y >= out.Y &&
		in.X+in.Width <= out.X+out.Width && in.Y+in.Height <= out.Y+out.Height
}

func TestTreeOfGTKWindow(t *testing.T) {
	t.Parallel()
	env, app, a := session(t, a11ytest.Options{Size: "1024x768"})
	start := time.Now()
	tr := tree(t, a, app.WindowID)
	t.Logf("tree of the test window: %d nodes in %v", len(tr.Nodes), time.Since(start))
	if tr.WindowID != app.WindowID || tr.Truncated {
		t.Errorf("tree window %d truncated %v, want %d untruncated", tr.WindowID, tr.Truncated, app.WindowID)
	}
	d := desktop.New(desktop.Options{Display: env.Display})
	defer d.Close()
	win, err := d.Window(t.Context(), app.WindowID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Nodes[0].Role != api.A11yRoleWindow || tr.Nodes[0].Name != "A11y Test Window" || tr.Nodes[0].Parent != "" {
		t.Errorf("first node %+v, want the window", tr.Nodes[0])
	}
	ids := map[string]bool{}
	for _, n := range tr.Nodes {
		if ids[n.ID] {
			t.Errorf("id %s twice", n.ID)
		}
		if n.Parent != "" && !ids[n.Parent] {
			t.Errorf("node %s %q: parent %s not before it (pre-order)", n.Role, n.Name, n.Parent)
		}
		ids[n.ID] = true
	}
	for _, w := range []struct{ role, name, action string }{
		{api.A11yRoleButton, "Press Me", "click"},
		{api.A11yRoleTextField, "Your Name", ""},
		{api.A11yRoleCheckBox, "Agree", "click"},
		{api.A11yRoleMenuBar, "", ""},
		{api.A11yRoleMenu, "File", "click"},
	} {
		n := find(tr, w.role, w.name)
		if n == nil {
			t.Errorf("no %s %q in the tree", w.role, w.name)
			continue
		}
		if !inside(n.Bounds, win.Bounds) {
			t.Errorf("%s %q: bounds %+v not inside the window's %+v", w.role, w.name, n.Bounds, win.Bounds)
		}
		if w.action != "" && !has(n.Actions, w.action) {
			t.Errorf("%s %q: actions %v, want %s", w.role, w.name, n.Actions, w.action)
		}
		if !has(n.States, api.A11yStateShowing) || !has(n.States, api.A11yStateEnabled) {
			t.Errorf("%s %q: states %v, want showing and enabled", w.role, w.name, n.States)
		}
	}
	// The button's bounds hold what a screenshot shows of it: the
	// program paints it magenta.
	img, area, err := d.Capture(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var magenta image.Rectangle
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			if c := img.RGBAAt(x, y); c.R > 240 && c.G < 16 && c.B > 240 {
				magenta = magenta.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	magenta = magenta.Add(image.Pt(area.X, area.Y))
	if b := find(tr, api.A11yRoleButton, "Press Me"); b != nil {
		box := image.Rect(b.Bounds.X, b.Bounds.Y, b.Bounds.X+b.Bounds.Width, b.Bounds.Y+b.Bounds.Height)
		t.Logf("button: magenta pixels %v, bounds %v", magenta, box)
		if magenta.Empty() || !magenta.In(box) || magenta.Dx()*magenta.Dy()*2 < box.Dx()*box.Dy() {
			t.Errorf("the screenshot shows the button at %v, its bounds are %v", magenta, box)
		}
	}
	if e := find(tr, api.A11yRoleTextField, "Your Name"); e != nil && !has(e.States, api.A11yStateEditable) {
		t.Errorf("entry states %v, want editable", e.States)
	}

	// The focused window (window_id 0) is the same frame.
	focused, err := a.Tree(t.Context(), api.A11yTreeRequest{})
	if err != nil || focused.WindowID != app.WindowID || len(focused.Nodes) != len(tr.Nodes) {
		t.Errorf("tree of the focused window: %v nodes, window %v, %v; want %d nodes of %d", lenNodes(focused), windowOf(focused), err, len(tr.Nodes), app.WindowID)
	}

	// Bounds cut the walk and say so.
	small, err := a.Tree(t.Context(), api.A11yTreeRequest{WindowID: app.WindowID, MaxNodes: 3})
	if err != nil || len(small.Nodes) != 3 || !small.Truncated {
		t.Errorf("max_nodes 3: %d nodes, truncated %v, %v", lenNodes(small), small != nil && small.Truncated, err)
	}
	shallow, err := a.Tree(t.Context(), api.A11yTreeRequest{WindowID: app.WindowID, MaxDepth: 1})
	if err != nil || !shallow.Truncated || len(shallow.Nodes) >= len(tr.Nodes) {
		t.Errorf("max_depth 1: %d nodes, truncated %v, %v", lenNodes(shallow), shallow != nil && shallow.Truncated, err)
	}
	all, err := a.Tree(t.Context(), api.A11yTreeRequest{WindowID: app.WindowID, IncludeHidden: true})
	if err != nil || len(all.Nodes) < len(tr.Nodes) {
		t.Errorf("include_hidden: %d nodes, %v; want at least the %d shown", lenNodes(all), err, len(tr.Nodes))
	}
}

func lenNodes(tr *api.A11yTree) int {
	if tr == nil {
		return -1
	}
	return len(tr.Nodes)
}

func windowOf(tr *api.A11yTree) uint32 {
	if tr == nil {
		return 0
	}
	return tr.WindowID
}

func TestFindSetValuePressCheck(t *testing.T) {
	t.Parallel()
	_, app, a := session(t, a11ytest.Options{NoRootProperty: true})
	tree(t, a, app.WindowID)

	found, err := a.Find(t.Context(), api.A11yQuery{WindowID: app.WindowID, Role: api.A11yRoleTextField})
	if err != nil || len(found) != 1 {
		t.Fatalf("find text_field: %+v, %v", found, err)
	}
	if found[0].Node.Name != "Your Name" || len(found[0].Path) == 0 || found[0].Path[0] != "A11y Test Window" {
		t.Errorf("found %+v, want the entry under the window", found[0])
	}
	if err := a.Act(t.Context(), api.A11yAction{ID: found[0].Node.ID, Action: api.A11yActionSetValue, Value: "hello a11y"}); err != nil {
		t.Fatalf("set_value: %v", err)
	}
	app.WaitLine(t, "entry text hello a11y")
	got, err := a.Find(t.Context(), api.A11yQuery{WindowID: app.WindowID, ValueContains: "HELLO"})
	if err != nil || len(got) != 1 || got[0].Node.Value != "hello a11y" {
		t.Errorf("find value_contains: %+v, %v", got, err)
	}

	btn, err := a.Find(t.Context(), api.A11yQuery{WindowID: app.WindowID, Role: api.A11yRoleButton, Name: "Press Me"})
	if err != nil || len(btn) != 1 {
		t.Fatalf("find button: %+v, %v", btn, err)
	}
	if err := a.Act(t.Context(), api.A11yAction{ID: btn[0].Node.ID, Action: api.A11yActionPress}); err != nil {
		t.Fatalf("press: %v", err)
	}
	app.WaitLine(t, "button pressed")

	box, err := a.Find(t.Context(), api.A11yQuery{WindowID: app.WindowID, NameContains: "agree"})
	if err != nil || len(box) != 1 || has(box[0].Node.States, api.A11yStateChecked) {
		t.Fatalf("find check box: %+v, %v", box, err)
	}
	if err := a.Act(t.Context(), api.A11yAction{ID: box[0].Node.ID, Action: api.A11yActionPress}); err != nil {
		t.Fatalf("press check box: %v", err)
	}
	app.WaitLine(t, "check toggled True")
	checked, err := a.Find(t.Context(), api.A11yQuery{WindowID: app.WindowID, Role: api.A11yRoleCheckBox, States: []string{api.A11yStateChecked}})
	if err != nil || len(checked) != 1 || checked[0].Node.Name != "Agree" {
		t.Errorf("the check box does not read checked in a new tree: %+v, %v", checked, err)
	}

	// focus moves the keyboard focus to the entry.
	if err := a.Act(t.Context(), api.A11yAction{ID: found[0].Node.ID, Action: api.A11yActionFocus}); err != nil {
		t.Errorf("focus: %v", err)
	}
	// An action the element lacks names the ones it has.
	err = a.Act(t.Context(), api.A11yAction{ID: btn[0].Node.ID, Action: api.A11yActionExpand})
	if api.KindOf(err) != api.KindPreconditionFailed || !strings.Contains(err.Error(), "click") {
		t.Errorf("expand a button: %v, want precondition_failed naming click", err)
	}
	if err := a.Act(t.Context(), api.A11yAction{ID: "!!", Action: api.A11yActionPress}); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("a malformed id: %v, want invalid_argument", err)
	}
	if err := a.Act(t.Context(), api.A11yAction{ID: btn[0].Node.ID, Action: "dance"}); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("an unknown action: %v, want invalid_argument", err)
	}
}

func TestStaleID(t *testing.T) {
	t.Parallel()
	_, app, a := session(t, a11ytest.Options{})
	first := tree(t, a, app.WindowID)
	btn := find(first, api.A11yRoleButton, "Press Me")
	if btn == nil {
		t.Fatal("no button")
	}
	// Enough newer trees to forget the first.
	for i := 0; i < 20; i++ {
		if _, err := a.Tree(t.Context(), api.A11yTreeRequest{WindowID: app.WindowID, MaxNodes: 1}); err != nil {
			t.Fatal(err)
		}
	}
	err := a.Act(t.Context(), api.A11yAction{ID: btn.ID, Action: api.A11yActionPress})
	if api.KindOf(err) != api.KindPreconditionFailed || !strings.Contains(err.Error(), "take the tree again") {
		t.Errorf("act on a stale id: %v, want precondition_failed: take the tree again", err)
	}
	// An id of another daemon (another A11y) is stale too.
	other := a11y.New(a11y.Options{})
	defer other.Close()
	fresh := tree(t, a, app.WindowID)
	err = other.Act(t.Context(), api.A11yAction{ID: find(fresh, api.A11yRoleButton, "Press Me").ID, Action: api.A11yActionPress})
	if api.KindOf(err) != api.KindPreconditionFailed {
		t.Errorf("act on another daemon's id: %v, want precondition_failed", err)
	}
}

func TestProbeWithoutBus(t *testing.T) {
	t.Parallel()
	a := a11y.New(a11y.Options{SessionBusAddress: "unix:path=/nonexistent/bus"})
	defer a.Close()
	start := time.Now()
	err := a.Probe(context.Background())
	var e *api.Error
	if !errors.As(err, &e) || e.Kind != api.KindCapabilityMissing || e.Feature != string(api.FeatureA11y) ||
		!strings.Contains(e.Limitation, "at-spi-bus-launcher") || strings.Count(e.Limitation, ". ") > 0 {
		t.Fatalf("probe without a bus: %#v, want capability_missing with one sentence", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("probe took %v", d)
	}
	if _, err := a.Tree(t.Context(), api.A11yTreeRequest{}); api.KindOf(err) != api.KindCapabilityMissing {
		t.Errorf("tree without a bus: %v, want capability_missing", err)
	}
	if st := a.Status(t.Context()); st.Supported || st.Limitation == "" {
		t.Errorf("status without a bus: %+v", st)
	}
}

func TestProbeWithBus(t *testing.T) {
	t.Parallel()
	env := a11ytest.Start(t, a11ytest.Options{})
	for name, opts := range map[string]a11y.Options{
		"root property": {Display: env.Display},
		"session bus":   {SessionBusAddress: env.SessionBus},
		"bus address":   {BusAddress: env.A11yBus},
	} {
		a := a11y.New(opts)
		if err := a.Probe(t.Context()); err != nil {
			t.Errorf("%s: probe: %v", name, err)
		}
		a.Close()
	}
}
