package a11y

import (
	"context"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/trycua/cua-spacesd/api"
)

// Act acts on one element by its toolkit's own AT-SPI actions; never by
// synthetic input. An element without the action answers
// precondition_failed naming the actions it has.
func (a *A11y) Act(ctx context.Context, act api.A11yAction) error {
	gen, r, err := decodeID(act.ID)
	if err != nil {
		return api.Errorf(api.KindInvalidArgument, "id %q is not an element id (%v); take it from a tree or a find", truncate(act.ID), err)
	}
	switch act.Action {
	case api.A11yActionPress, api.A11yActionFocus, api.A11yActionSetValue, api.A11yActionSelect,
		api.A11yActionExpand, api.A11yActionCollapse, api.A11yActionScrollIntoView:
	default:
		return api.Errorf(api.KindInvalidArgument, "action %q: want one of %s", act.Action, strings.Join(api.A11yActions, ", "))
	}
	ent, ok := a.snaps.lookup(gen, r)
	if !ok {
		return errStale("element " + truncate(act.ID) + " is of a tree this Space no longer holds")
	}
	ctx, cancel := context.WithTimeout(ctx, actTimeout)
	defer cancel()
	c, err := a.bus(ctx)
	if err != nil {
		return err
	}
	n, err := readNode(ctx, c, r, false)
	if err != nil {
		if e := api.AsError(connErr(ctx, "element "+act.ID, err)); e.Kind != api.KindPreconditionFailed {
			return e
		}
		return errStale("element " + truncate(act.ID) + " is gone")
	}
	if hasState(n.States, "defunct") {
		return errStale("element " + truncate(act.ID) + " is gone")
	}
	what := act.Action + " on " + describe(n)
	switch act.Action {
	case api.A11yActionPress:
		if i := actionIndex(n, "click", "press", "activate", "toggle", "jump", "open"); i >= 0 {
			return doAction(ctx, c, n, i, what)
		}
	case api.A11yActionFocus:
		if n.Interfaces[ifaceComponent] {
			return callBool(ctx, c, r, ifaceComponent, "GrabFocus", what)
		}
	case api.A11yActionSetValue:
		if n.Interfaces[ifaceEditableText] {
			return callBool(ctx, c, r, ifaceEditableText, "SetTextContents", what, act.Value)
		}
		if n.Interfaces[ifaceValue] {
			f, err := strconv.ParseFloat(strings.TrimSpace(act.Value), 64)
			if err != nil {
				return api.Errorf(api.KindInvalidArgument, "%s: value %q is not a number", what, truncate(act.Value))
			}
			err = call(ctx, c, r, ifaceProperties, "Set", nil, ifaceValue, "CurrentValue", dbus.MakeVariant(f))
			return connErr(ctx, what, err)
		}
	case api.A11yActionSelect:
		if ent.parent.valid() {
			if p, err := readNode(ctx, c, ent.parent, false); err == nil && p.Interfaces[ifaceSelection] {
				return callBool(ctx, c, ent.parent, ifaceSelection, "SelectChild", what, int32(ent.index))
			}
		}
		if i := actionIndex(n, "select"); i >= 0 {
			return doAction(ctx, c, n, i, what)
		}
	case api.A11yActionExpand, api.A11yActionCollapse:
		want := act.Action == api.A11yActionExpand
		if i := actionIndex(n, act.Action); i >= 0 {
			return doAction(ctx, c, n, i, what)
		}
		if hasState(n.States, api.A11yStateExpandable) {
			if hasState(n.States, api.A11yStateExpanded) == want {
				return nil // already so
			}
			if i := actionIndex(n, "activate", "click", "toggle"); i >= 0 {
				return doAction(ctx, c, n, i, what)
			}
		}
	case api.A11yActionScrollIntoView:
		if n.Interfaces[ifaceComponent] {
			// Toolkits may offer Component without ScrollTo (GTK 3's
			// widgets answer false): say so, not just that it declined.
			var ok bool
			if err := call(ctx, c, r, ifaceComponent, "ScrollTo", []any{&ok}, scrollAnywhere); err != nil {
				return connErr(ctx, what, err)
			}
			if !ok {
				return api.Errorf(api.KindPreconditionFailed, "%s: the application does not scroll its elements into view (it declined AT-SPI Component.ScrollTo; GTK 3 applications always do)", what).
					WithHint("scroll the container instead: set_value on its scroll_bar")
			}
			return nil
		}
	}
	has := "none"
	if len(n.Actions) > 0 {
		has = strings.Join(n.Actions, ", ")
	}
	return api.Errorf(api.KindPreconditionFailed, "%s: the element does not offer it (its actions: %s)", what, has).
		WithHint("pick an action the element has, or another element")
}

// actionIndex answers the index of the first of names the element offers
// (case-insensitive), or -1.
func actionIndex(n *rawNode, names ...string) int {
	for _, want := range names {
		for i, have := range n.Actions {
			if strings.EqualFold(have, want) {
				return i
			}
		}
	}
	return -1
}

func doAction(ctx context.Context, c *dbus.Conn, n *rawNode, i int, what string) error {
	return callBool(ctx, c, n.ref, ifaceAction, "DoAction", what, int32(i))
}

// callBool calls a method that answers whether it did it.
func callBool(ctx context.Context, c *dbus.Conn, r ref, iface, method, what string, args ...any) error {
	var ok bool
	if err := call(ctx, c, r, iface, method, []any{&ok}, args...); err != nil {
		return connErr(ctx, what, err)
	}
	if !ok {
		return api.Errorf(api.KindPreconditionFailed, "%s: the application declined %s", what, method)
	}
	return nil
}

// describe names an element for an error: its role and name.
func describe(n *rawNode) string {
	if n.Name == "" {
		return normalRole(n.RoleName)
	}
	return normalRole(n.RoleName) + " " + strconv.Quote(truncate(n.Name))
}

// truncate shortens s for an error message.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
