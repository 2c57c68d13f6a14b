package a11y

import (
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// roleMap maps AT-SPI role names (GetRoleName, lower case, spaces) to the
// normalised roles; a role not here is "other".
var roleMap = map[string]string{
	"push button": api.A11yRoleButton, "button": api.A11yRoleButton, "push button menu": api.A11yRoleButton,
	"toggle button": api.A11yRoleToggle,
	"check box":     api.A11yRoleCheckBox, "check menu item": api.A11yRoleMenuItem,
	"radio button": api.A11yRoleRadioButton, "radio menu item": api.A11yRoleMenuItem,
	"text": api.A11yRoleTextField, "entry": api.A11yRoleTextField, "password text": api.A11yRoleTextField,
	"editbar": api.A11yRoleTextField, "search box": api.A11yRoleTextField, "terminal": api.A11yRoleTextField,
	"label": api.A11yRoleLabel, "static": api.A11yRoleLabel, "caption": api.A11yRoleLabel,
	"paragraph": api.A11yRoleLabel, "accelerator label": api.A11yRoleLabel,
	"menu": api.A11yRoleMenu, "popup menu": api.A11yRoleMenu,
	"menu item": api.A11yRoleMenuItem, "tearoff menu item": api.A11yRoleMenuItem,
	"menu bar": api.A11yRoleMenuBar,
	"list":     api.A11yRoleList, "list box": api.A11yRoleList,
	"list item": api.A11yRoleListItem,
	"table":     api.A11yRoleTable, "tree table": api.A11yRoleTree,
	"table row":  api.A11yRoleRow,
	"table cell": api.A11yRoleCell, "cell": api.A11yRoleCell, "table column header": api.A11yRoleCell,
	"table row header": api.A11yRoleCell, "column header": api.A11yRoleCell, "row header": api.A11yRoleCell,
	"tree":      api.A11yRoleTree,
	"tree item": api.A11yRoleTreeItem,
	"page tab":  api.A11yRoleTab, "page tab list": api.A11yRoleTabList,
	"frame": api.A11yRoleWindow, "window": api.A11yRoleWindow, "internal frame": api.A11yRoleWindow,
	"dialog": api.A11yRoleDialog, "alert": api.A11yRoleDialog, "file chooser": api.A11yRoleDialog,
	"color chooser": api.A11yRoleDialog, "font chooser": api.A11yRoleDialog,
	"panel": api.A11yRolePanel, "filler": api.A11yRolePanel, "scroll pane": api.A11yRolePanel,
	"viewport": api.A11yRolePanel, "split pane": api.A11yRolePanel, "layered pane": api.A11yRolePanel,
	"root pane": api.A11yRolePanel, "glass pane": api.A11yRolePanel, "section": api.A11yRolePanel,
	"form": api.A11yRolePanel, "grouping": api.A11yRolePanel, "option pane": api.A11yRolePanel,
	"desktop frame": api.A11yRolePanel, "landmark": api.A11yRolePanel,
	"tool bar": api.A11yRoleToolbar, "toolbar": api.A11yRoleToolbar,
	"scroll bar": api.A11yRoleScrollBar,
	"slider":     api.A11yRoleSlider, "dial": api.A11yRoleSlider,
	"spin button": api.A11yRoleSpinButton,
	"combo box":   api.A11yRoleComboBox,
	"link":        api.A11yRoleLink,
	"image":       api.A11yRoleImage, "icon": api.A11yRoleImage, "canvas": api.A11yRoleImage,
	"document frame": api.A11yRoleDocument, "document web": api.A11yRoleDocument,
	"document text": api.A11yRoleDocument, "document email": api.A11yRoleDocument,
	"document spreadsheet": api.A11yRoleDocument, "document presentation": api.A11yRoleDocument,
	"html container": api.A11yRoleDocument,
	"heading":        api.A11yRoleHeading, "header": api.A11yRoleHeading,
	"separator":  api.A11yRoleSeparator,
	"status bar": api.A11yRoleStatusBar, "statusbar": api.A11yRoleStatusBar,
	"progress bar": api.A11yRoleProgressBar, "level bar": api.A11yRoleProgressBar,
	"application": api.A11yRoleApplication,
}

// normalRole maps an AT-SPI role name to the normalised set. It accepts
// the spellings toolkits use (spaces, underscores or dashes, any case).
func normalRole(raw string) string {
	k := strings.ToLower(strings.TrimSpace(raw))
	k = strings.NewReplacer("_", " ", "-", " ").Replace(k)
	if r, ok := roleMap[k]; ok {
		return r
	}
	return api.A11yRoleOther
}

// stateNames are AT-SPI's state types (AtspiStateType), by bit number.
var stateNames = [...]string{
	"invalid", "active", "armed", "busy", "checked", "collapsed", "defunct", "editable",
	"enabled", "expandable", "expanded", "focusable", "focused", "has_tooltip", "horizontal", "iconified",
	"modal", "multi_line", "multiselectable", "opaque", "pressed", "resizable", "selectable", "selected",
	"sensitive", "showing", "single_line", "stale", "transient", "vertical", "visible", "manages_descendants",
	"indeterminate", "required", "truncated", "animated", "invalid_entry", "supports_autocompletion", "selectable_text", "is_default",
	"visited", "checkable", "has_popup", "read_only",
}

// reportedStates are the states a node answers; the rest are noise to an
// agent.
var reportedStates = map[string]bool{
	"active": true, "checked": true, "collapsed": true, "editable": true, "enabled": true, "expandable": true,
	"expanded": true, "focusable": true, "focused": true, "indeterminate": true, "modal": true,
	"multi_line": true, "pressed": true, "read_only": true, "selectable": true, "selected": true,
	"sensitive": true, "showing": true, "visible": true, "checkable": true, "has_popup": true, "defunct": true,
	"required": true, "invalid_entry": true, "busy": true,
}

// stateSet decodes GetState's bit words into state names, in bit order.
func stateSet(words []uint32) []string {
	var out []string
	for i, w := range words {
		for b := 0; b < 32; b++ {
			if w&(1<<b) == 0 {
				continue
			}
			n := i*32 + b
			if n < len(stateNames) && reportedStates[stateNames[n]] {
				out = append(out, stateNames[n])
			}
		}
	}
	return out
}

func hasState(states []string, s string) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}
