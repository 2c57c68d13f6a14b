package a11y_test

import (
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ytest"
)

// findOne finds the one element of the window that q names.
func findOne(t *testing.T, a *a11y.A11y, q api.A11yQuery) api.A11yNode {
	t.Helper()
	found, err := a.Find(t.Context(), q)
	if err != nil || len(found) != 1 {
		t.Fatalf("find %+v: %+v, %v", q, found, err)
	}
	return found[0].Node
}

// eventually re-reads the window until ok holds of the element q names.
func eventually(t *testing.T, a *a11y.A11y, q api.A11yQuery, what string, ok func(api.A11yNode) bool) api.A11yNode {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		found, err := a.Find(t.Context(), q)
		if err == nil && len(found) == 1 && ok(found[0].Node) {
			return found[0].Node
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: a new tree reads %+v, %v", what, found, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func act(t *testing.T, a *a11y.A11y, id, action, value string) {
	t.Helper()
	if err := a.Act(t.Context(), api.A11yAction{ID: id, Action: action, Value: value}); err != nil {
		t.Fatalf("%s: %v", action, err)
	}
}

// TestActionsOnMoreWidgets: expand and collapse an expander, set_value on
// a scale (the Value interface), select a row of a list box (its parent's
// Selection), and scroll_into_view a label scrolled out of view (GTK 3
// declines Component.ScrollTo: the action says so, and set_value on the
// scroll bar, its hint, scrolls instead); the program prints what it saw
// and a new tree reads the new states.
func TestActionsOnMoreWidgets(t *testing.T) {
	t.Parallel()
	_, app, a := session(t, a11ytest.Options{})
	tree(t, a, app.WindowID)
	win := app.WindowID

	// expand, collapse; again is a no-op.
	expQ := api.A11yQuery{WindowID: win, Name: "More Options"}
	exp := findOne(t, a, expQ)
	if !has(exp.States, api.A11yStateExpandable) || has(exp.States, api.A11yStateExpanded) {
		t.Errorf("expander states %v, want expandable, not expanded", exp.States)
	}
	act(t, a, exp.ID, api.A11yActionExpand, "")
	app.WaitLine(t, "expander expanded True")
	exp = eventually(t, a, expQ, "expanded", func(n api.A11yNode) bool { return has(n.States, api.A11yStateExpanded) })
	act(t, a, exp.ID, api.A11yActionExpand, "") // already expanded: nothing
	act(t, a, exp.ID, api.A11yActionCollapse, "")
	app.WaitLine(t, "expander expanded False")
	exp = eventually(t, a, expQ, "collapsed", func(n api.A11yNode) bool { return !has(n.States, api.A11yStateExpanded) })
	act(t, a, exp.ID, api.A11yActionCollapse, "") // already collapsed: nothing
	act(t, a, exp.ID, api.A11yActionExpand, "")
	if l := app.WaitLine(t, "expander expanded"); l != "expander expanded True" {
		t.Errorf("collapse of a collapsed expander toggled it: then expand printed %q", l)
	}

	// set_value on a range.
	scQ := api.A11yQuery{WindowID: win, Role: api.A11yRoleSlider, Name: "Volume"}
	sc := findOne(t, a, scQ)
	if sc.Value != "10" {
		t.Errorf("scale value %q, want 10", sc.Value)
	}
	act(t, a, sc.ID, api.A11yActionSetValue, " 42 ")
	app.WaitLine(t, "scale value 42")
	eventually(t, a, scQ, "scale value", func(n api.A11yNode) bool { return n.Value == "42" })
	err := a.Act(t.Context(), api.A11yAction{ID: sc.ID, Action: api.A11yActionSetValue, Value: "loud"})
	if api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("set_value loud on a scale: %v, want invalid_argument", err)
	}

	// select a row: its list box's Selection.
	rowQ := api.A11yQuery{WindowID: win, Role: api.A11yRoleListItem, Name: "Banana"}
	row := findOne(t, a, rowQ)
	if has(row.States, api.A11yStateSelected) {
		t.Errorf("row states %v before select, want not selected", row.States)
	}
	act(t, a, row.ID, api.A11yActionSelect, "")
	app.WaitLine(t, "selected Banana")
	eventually(t, a, rowQ, "selected", func(n api.A11yNode) bool { return has(n.States, api.A11yStateSelected) })
	cherry := findOne(t, a, api.A11yQuery{WindowID: win, Role: api.A11yRoleListItem, Name: "Cherry"})
	act(t, a, cherry.ID, api.A11yActionSelect, "")
	app.WaitLine(t, "selected Cherry")
	eventually(t, a, rowQ, "unselected", func(n api.A11yNode) bool { return !has(n.States, api.A11yStateSelected) })

	// scroll_into_view a label out of view: a find does not see it (it
	// is neither showing nor visible); a tree with hidden nodes does.
	farTree := func() *api.A11yNode {
		tr, err := a.Tree(t.Context(), api.A11yTreeRequest{WindowID: win, IncludeHidden: true})
		if err != nil {
			t.Fatal(err)
		}
		return find(tr, api.A11yRoleLabel, "Far Away")
	}
	far := farTree()
	if far == nil {
		t.Fatal("no label Far Away in the tree with hidden nodes")
	}
	// Scrolled out of view, it has no place on the screen: zero bounds,
	// not GTK's INT32_MIN.
	if far.Bounds.X < -100000 || far.Bounds.Y < -100000 {
		t.Fatalf("a label out of view has bounds %+v", far.Bounds)
	}
	err = a.Act(t.Context(), api.A11yAction{ID: far.ID, Action: api.A11yActionScrollIntoView})
	t.Logf("scroll_into_view: %v", err)
	if err == nil {
		app.WaitLine(t, "scrolled")
		deadline := time.Now().Add(5 * time.Second)
		for far = farTree(); far == nil || !has(far.States, api.A11yStateShowing); far = farTree() {
			if time.Now().After(deadline) {
				t.Fatalf("scrolled into view, the label reads %+v", far)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	// GTK 3 does not implement Component.ScrollTo: the action says so,
	// and its hint, set_value on the scroll bar, brings the label in.
	if api.KindOf(err) != api.KindPreconditionFailed || !strings.Contains(err.Error(), "ScrollTo") ||
		!strings.Contains(api.AsError(err).Hint, "scroll_bar") {
		t.Fatalf("scroll_into_view: %v, want it done or precondition_failed naming ScrollTo", err)
	}
	bar := findOne(t, a, api.A11yQuery{WindowID: win, Role: api.A11yRoleScrollBar, States: []string{api.A11yStateShowing}})
	act(t, a, bar.ID, api.A11yActionSetValue, "10000")
	app.WaitLine(t, "scrolled")
	deadline := time.Now().Add(5 * time.Second)
	for far = farTree(); far == nil || !has(far.States, api.A11yStateShowing); far = farTree() {
		if time.Now().After(deadline) {
			t.Fatalf("scrolled by its bar, the label reads %+v", far)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
