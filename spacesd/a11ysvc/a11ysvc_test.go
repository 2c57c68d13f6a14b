package a11ysvc_test

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ytest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestA11yOverHTTPAndMCP: a daemon on a desktop with an accessibility bus
// and a GTK program serves a11y: the tree of the program's window holds
// its button and entry; find the entry by role and set its text over
// HTTP, the program reads it; press the button through the in-space MCP's
// space_find_element and space_element_action, the program sees the
// press; the tree tool's text is an outline that names the button.
func TestA11yOverHTTPAndMCP(t *testing.T) {
	a11ytest.Require(t)
	env := a11ytest.Start(t, a11ytest.Options{})
	app := env.StartApp(t)
	d := spacesdtest.Start(t, spacesdtest.Options{Display: env.Display})
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok, lim := caps.Supports(api.FeatureA11y); !ok {
		t.Fatalf("a11y unsupported with a bus: %s", lim)
	}

	tree, err := d.Client.A11yTree(t.Context(), api.A11yTreeRequest{WindowID: app.WindowID})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]bool{}
	for _, n := range tree.Nodes {
		roles[n.Role] = true
	}
	if !roles[api.A11yRoleButton] || !roles[api.A11yRoleTextField] || !roles[api.A11yRoleCheckBox] {
		t.Fatalf("the tree of window %d lacks a button, an entry or a check box: roles %v", app.WindowID, roles)
	}

	found, err := d.Client.A11yFind(t.Context(), api.A11yQuery{WindowID: app.WindowID, Role: api.A11yRoleTextField})
	if err != nil || len(found) != 1 {
		t.Fatalf("find the entry: %+v, %v", found, err)
	}
	if err := d.Client.A11yAct(t.Context(), api.A11yAction{ID: found[0].Node.ID, Action: api.A11yActionSetValue, Value: "over http"}); err != nil {
		t.Fatal(err)
	}
	app.WaitLine(t, "entry text over http")

	err = d.Client.A11yAct(t.Context(), api.A11yAction{ID: found[0].Node.ID, Action: api.A11yActionExpand})
	if api.KindOf(err) != api.KindPreconditionFailed {
		t.Fatalf("expand on an entry: %v, want precondition_failed", err)
	}

	cs := d.MCPClient(t, nil)
	res := callTool(t, cs, "space_find_element", map[string]any{"window_id": app.WindowID, "role": api.A11yRoleButton})
	var out struct {
		Elements []api.A11yFound `json:"elements"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || res.IsError || len(out.Elements) == 0 {
		t.Fatalf("space_find_element: %s", b)
	}
	res = callTool(t, cs, "space_element_action", map[string]any{"id": out.Elements[0].Node.ID, "action": api.A11yActionPress})
	if res.IsError {
		t.Fatalf("space_element_action press: %+v", res.Content)
	}
	app.WaitLine(t, "button pressed")

	res = callTool(t, cs, "space_accessibility_tree", map[string]any{"window_id": app.WindowID})
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError || !strings.Contains(text, "\n  ") || !strings.Contains(text, "button \""+out.Elements[0].Node.Name+"\"") {
		t.Fatalf("the tree's outline:\n%s", text)
	}
}

// TestA11yWithoutABus: a11y is unsupported with its sentence, and a route
// answers capability_missing.
func TestA11yWithoutABus(t *testing.T) {
	a11ytest.Require(t)
	env := a11ytest.Start(t, a11ytest.Options{NoRootProperty: true})
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
	d := spacesdtest.Start(t, spacesdtest.Options{Display: env.Display})
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ok, lim := caps.Supports(api.FeatureA11y)
	if ok || lim == "" {
		t.Fatalf("a11y without a bus: supported %v, limitation %q", ok, lim)
	}
	_, err = d.Client.A11yTree(t.Context(), api.A11yTreeRequest{})
	if api.KindOf(err) != api.KindCapabilityMissing {
		t.Fatalf("the tree without a bus: %v", err)
	}
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}
