package compatsvc_test

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ytest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestBusAccessibilityWidgets: on a desktop with an accessibility bus,
// get_accessibility_tree nests a GTK program's widgets under its window
// (source at-spi), and find_element finds its button by role and title.
func TestBusAccessibilityWidgets(t *testing.T) {
	a11ytest.Require(t)
	env := a11ytest.Start(t, a11ytest.Options{})
	app := env.StartApp(t)
	d := spacesdtest.Start(t, spacesdtest.Options{Display: env.Display, NoToken: true})
	b := dialBus(t, wsURL(d), nil)

	tree := b.ok("get_accessibility_tree", nil)
	if tree["source"] != "at-spi" {
		t.Fatalf("source %v, want at-spi", tree["source"])
	}
	var window map[string]any
	for _, c := range tree["tree"].(map[string]any)["children"].([]any) {
		if n := c.(map[string]any); n["window_id"] == float64(app.WindowID) {
			window = n
		}
	}
	if window == nil {
		t.Fatalf("window %d not in the tree", app.WindowID)
	}
	var roles []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		for _, c := range n["children"].([]any) {
			m := c.(map[string]any)
			roles = append(roles, m["role"].(string))
			if m["id"] == "" || m["bounds"] == nil {
				t.Fatalf("a widget without id or bounds: %v", m)
			}
			walk(m)
		}
	}
	walk(window)
	has := map[string]bool{}
	for _, r := range roles {
		has[r] = true
	}
	if !has["button"] || !has["text_field"] || !has["check_box"] {
		t.Fatalf("the window's widgets: %v", roles)
	}

	res := b.ok("find_element", map[string]any{"role": "button", "window_id": app.WindowID})
	el, _ := res["element"].(map[string]any)
	if res["found"] != true || el == nil || el["role"] != "button" || el["id"] == "" {
		t.Fatalf("find_element: %v", res)
	}
}

// TestPublishedNodeClientAccessibility: @trycua/computer's own
// getAccessibilityTree, as published, gets the real tree: the GTK
// program's window with its button below it.
func TestPublishedNodeClientAccessibility(t *testing.T) {
	requireNodeClient(t)
	a11ytest.Require(t)
	env := a11ytest.Start(t, a11ytest.Options{})
	app := env.StartApp(t)
	d := spacesdtest.Start(t, spacesdtest.Options{Display: env.Display, NoToken: true})
	nc := startNodeClient(t, "")
	host := strings.TrimPrefix(d.URL, "http://")
	if a := nc.do(map[string]any{"op": "connect", "host": host, "name": "space"}); a.Error != nil {
		t.Fatalf("connect: %s\n%s", *a.Error, nc.stderr.String())
	}
	type node struct {
		Role     string `json:"role"`
		Title    string `json:"title"`
		WindowID uint32 `json:"window_id"`
		Children []node `json:"children"`
	}
	var tree struct {
		Tree   node   `json:"tree"`
		Source string `json:"source"`
	}
	nc.call(&tree, "getAccessibilityTree")
	var buttons int
	var count func(n node)
	count = func(n node) {
		if n.Role == "button" {
			buttons++
		}
		for _, c := range n.Children {
			count(c)
		}
	}
	for _, w := range tree.Tree.Children {
		if w.WindowID == app.WindowID {
			count(w)
		}
	}
	if tree.Source != "at-spi" || buttons == 0 {
		t.Fatalf("getAccessibilityTree: source %q, %d buttons under window %d", tree.Source, buttons, app.WindowID)
	}
}
