# A GTK 3 window for the accessibility tests: a menu bar, a button, a text
# entry, a check box, an expander, a scale, a list of selectable rows and
# a label scrolled far out of view. It prints what happens to them, one
# line each.
import os

import gi

gi.require_version("Gdk", "3.0")
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, GLib, Gtk


def say(*words):
    print(*words, flush=True)


window = Gtk.Window(title="A11y Test Window")
window.set_default_size(420, 260)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)

menubar = Gtk.MenuBar()
file_item = Gtk.MenuItem(label="File")
menu = Gtk.Menu()
quit_item = Gtk.MenuItem(label="Quit")
quit_item.connect("activate", lambda *_: say("menu quit"))
menu.append(quit_item)
file_item.set_submenu(menu)
menubar.append(file_item)
box.pack_start(menubar, False, False, 0)

# The button is magenta, so a test finds it in a screenshot.
css = Gtk.CssProvider()
css.load_from_data(b"#press { background: #ff00ff; background-image: none; color: #ff00ff; }")
Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), css, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
button = Gtk.Button(label="Press Me")
button.set_name("press")
button.connect("clicked", lambda *_: say("button pressed"))
box.pack_start(button, False, False, 0)

entry = Gtk.Entry()
entry.get_accessible().set_name("Your Name")
entry.connect("changed", lambda e: say("entry text " + e.get_text()))
box.pack_start(entry, False, False, 0)

check = Gtk.CheckButton(label="Agree")
check.connect("toggled", lambda c: say("check toggled " + str(c.get_active())))
box.pack_start(check, False, False, 0)

expander = Gtk.Expander(label="More Options")
expander.add(Gtk.Label(label="Hidden details"))
expander.connect("notify::expanded", lambda e, _: say("expander expanded " + str(e.get_expanded())))
box.pack_start(expander, False, False, 0)

scale = Gtk.Scale.new_with_range(Gtk.Orientation.HORIZONTAL, 0, 100, 1)
scale.set_digits(0)
scale.set_value(10)
scale.get_accessible().set_name("Volume")
scale.connect("value-changed", lambda s: say("scale value %d" % round(s.get_value())))
box.pack_start(scale, False, False, 0)

fruits = Gtk.ListBox()
fruits.get_accessible().set_name("Fruits")
fruits.set_selection_mode(Gtk.SelectionMode.SINGLE)
for fruit in ("Apple", "Banana", "Cherry"):
    row = Gtk.ListBoxRow()
    row.add(Gtk.Label(label=fruit))
    row.get_accessible().set_name(fruit)
    fruits.add(row)
fruits.connect("row-selected", lambda lb, row: row and say("selected " + row.get_accessible().get_name()))
box.pack_start(fruits, False, False, 0)

# A label at the end of a short scrolled list, out of view at first.
lines = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
for i in range(40):
    lines.pack_start(Gtk.Label(label="Line %d" % i), False, False, 0)
lines.pack_start(Gtk.Label(label="Far Away"), False, False, 0)
far_scroller = Gtk.ScrolledWindow()
far_scroller.set_policy(Gtk.PolicyType.NEVER, Gtk.PolicyType.AUTOMATIC)
far_scroller.set_size_request(-1, 50)
far_scroller.add(lines)
far_scroller.get_vadjustment().connect("value-changed", lambda a: say("scrolled %d" % a.get_value()))
box.pack_start(far_scroller, False, False, 0)

# A11Y_TEST_BUTTONS more buttons in a scrolled grid, for benchmarks.
extra = int(os.environ.get("A11Y_TEST_BUTTONS", "0"))
if extra > 0:
    grid = Gtk.Grid()
    for i in range(extra):
        grid.attach(Gtk.Button(label="B%d" % i), i % 20, i // 20, 1, 1)
    scroller = Gtk.ScrolledWindow()
    scroller.set_vexpand(True)
    scroller.add(grid)
    box.pack_start(scroller, True, True, 0)

window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
GLib.idle_add(lambda: say("ready") and False)
Gtk.main()
