package a11y

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/trycua/cua-spacesd/api"
)

// AT-SPI's names on the accessibility bus.
const (
	registryName         = "org.a11y.atspi.Registry"
	rootPath             = dbus.ObjectPath("/org/a11y/atspi/accessible/root")
	ifaceAccessible      = "org.a11y.atspi.Accessible"
	ifaceComponent       = "org.a11y.atspi.Component"
	ifaceAction          = "org.a11y.atspi.Action"
	ifaceText            = "org.a11y.atspi.Text"
	ifaceEditableText    = "org.a11y.atspi.EditableText"
	ifaceValue           = "org.a11y.atspi.Value"
	ifaceSelection       = "org.a11y.atspi.Selection"
	ifaceProperties      = "org.freedesktop.DBus.Properties"
	coordTypeScreen      = uint32(0)
	scrollAnywhere       = uint32(6)
	maxTextBytes         = 4096 // of a node's value
	maxChildrenPerNode   = 10000
	maxActions           = 32
	nullPath             = dbus.ObjectPath("/org/a11y/atspi/null")
	atspiAccessiblePath0 = "/org/a11y/atspi/accessible/"
)

// ref names one accessible: its application's bus name and its path.
type ref struct {
	Bus  string
	Path dbus.ObjectPath
}

func (r ref) valid() bool { return r.Bus != "" && r.Path.IsValid() && r.Path != nullPath }

// call calls method of iface on r, bounded by callTimeout, storing the
// reply in out.
func call(ctx context.Context, c *dbus.Conn, r ref, iface, method string, out []any, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cl := c.Object(r.Bus, r.Path).CallWithContext(ctx, iface+"."+method, 0, args...)
	if cl.Err != nil {
		return cl.Err
	}
	if len(out) == 0 {
		return nil
	}
	return cl.Store(out...)
}

// getProp reads one property.
func getProp(ctx context.Context, c *dbus.Conn, bus string, path dbus.ObjectPath, iface, name string, out any) error {
	var v dbus.Variant
	if err := call(ctx, c, ref{bus, path}, ifaceProperties, "Get", []any{&v}, iface, name); err != nil {
		return err
	}
	return dbus.Store([]any{v.Value()}, out)
}

// rawNode is what one element answered.
type rawNode struct {
	ref
	RoleName    string
	Name        string
	Description string
	States      []string
	Interfaces  map[string]bool
	Children    []ref
	Bounds      api.Rect
	Actions     []string
	Value       string
	ChildCount  int
}

// pending is one asynchronous call of a node's read.
type pending struct {
	call *dbus.Call
	out  []any
}

// readNode reads one element in two rounds of calls sent at once: what
// every accessible answers, then the interfaces it has.
func readNode(ctx context.Context, c *dbus.Conn, r ref, withChildren bool) (*rawNode, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	obj := c.Object(r.Bus, r.Path)
	n := &rawNode{ref: r, Interfaces: map[string]bool{}}
	var (
		props  map[string]dbus.Variant
		states []uint32
		ifaces []string
		kids   []struct {
			Bus  string
			Path dbus.ObjectPath
		}
	)
	round := []pending{
		{obj.GoWithContext(ctx, ifaceProperties+".GetAll", 0, nil, ifaceAccessible), []any{&props}},
		{obj.GoWithContext(ctx, ifaceAccessible+".GetRoleName", 0, nil), []any{&n.RoleName}},
		{obj.GoWithContext(ctx, ifaceAccessible+".GetState", 0, nil), []any{&states}},
		{obj.GoWithContext(ctx, ifaceAccessible+".GetInterfaces", 0, nil), []any{&ifaces}},
	}
	if withChildren {
		round = append(round, pending{obj.GoWithContext(ctx, ifaceAccessible+".GetChildren", 0, nil), []any{&kids}})
	}
	if err := wait(ctx, round); err != nil {
		return nil, err
	}
	if v, ok := props["Name"].Value().(string); ok {
		n.Name = v
	}
	if v, ok := props["ChildCount"].Value().(int32); ok {
		n.ChildCount = int(v)
	}
	if v, ok := props["Description"].Value().(string); ok {
		n.Description = v
	}
	n.States = stateSet(states)
	for _, i := range ifaces {
		if !strings.Contains(i, ".") {
			i = "org.a11y.atspi." + i
		}
		n.Interfaces[i] = true
	}
	if len(kids) > maxChildrenPerNode {
		kids = kids[:maxChildrenPerNode]
	}
	for _, k := range kids {
		if kr := (ref{k.Bus, k.Path}); kr.valid() {
			n.Children = append(n.Children, kr)
		}
	}

	var (
		ext     struct{ X, Y, W, H int32 }
		actions []struct{ Name, Desc, Key string }
		text    string
		value   dbus.Variant
	)
	round = round[:0]
	if n.Interfaces[ifaceComponent] {
		round = append(round, pending{obj.GoWithContext(ctx, ifaceComponent+".GetExtents", 0, nil, coordTypeScreen), []any{&ext}})
	}
	if n.Interfaces[ifaceAction] {
		round = append(round, pending{obj.GoWithContext(ctx, ifaceAction+".GetActions", 0, nil), []any{&actions}})
	}
	if n.Interfaces[ifaceText] && (hasState(n.States, api.A11yStateEditable) || n.Interfaces[ifaceEditableText]) {
		round = append(round, pending{obj.GoWithContext(ctx, ifaceText+".GetText", 0, nil, int32(0), int32(maxTextBytes)), []any{&text}})
	}
	if n.Interfaces[ifaceValue] {
		round = append(round, pending{obj.GoWithContext(ctx, ifaceProperties+".Get", 0, nil, ifaceValue, "CurrentValue"), []any{&value}})
	}
	if err := wait(ctx, round); err != nil {
		return nil, err
	}
	// GTK answers INT32_MIN for a widget scrolled out of its view: no
	// place on the screen, so no bounds (zero), not a point 2^31 pixels
	// off.
	if ext.X != math.MinInt32 && ext.Y != math.MinInt32 {
		n.Bounds = api.Rect{X: int(ext.X), Y: int(ext.Y), Width: int(ext.W), Height: int(ext.H)}
	}
	if len(actions) > maxActions {
		actions = actions[:maxActions]
	}
	// GetActions answers the localized names; GetName the toolkit's own
	// ("click"), which do not change with the language.
	n.Actions = make([]string, len(actions))
	round = round[:0]
	for i := range actions {
		round = append(round, pending{obj.GoWithContext(ctx, ifaceAction+".GetName", 0, nil, int32(i)), []any{&n.Actions[i]}})
	}
	if err := wait(ctx, round); err != nil {
		return nil, err
	}
	n.Value = text
	if f, ok := value.Value().(float64); ok && n.Value == "" && !math.IsNaN(f) {
		n.Value = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return n, nil
}

// wait waits for every call of a round; the first error wins.
func wait(ctx context.Context, round []pending) error {
	var first error
	for _, p := range round {
		select {
		case <-p.call.Done:
		case <-ctx.Done():
			if first == nil {
				first = ctx.Err()
			}
			continue
		}
		if p.call.Err != nil {
			if first == nil {
				first = p.call.Err
			}
			continue
		}
		if err := p.call.Store(p.out...); err != nil && first == nil {
			first = fmt.Errorf("%s: %w", p.call.Method, err)
		}
	}
	return first
}
