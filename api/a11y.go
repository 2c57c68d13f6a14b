package api

// The accessibility tree of a window (capability a11y, AT-SPI2 on Linux):
// read it, find elements in it, act on one by the toolkit's own actions.

// Normalised roles: the small fixed set an A11yNode's Role takes; the
// toolkit's own role name travels beside it in RawRole.
const (
	A11yRoleButton      = "button"
	A11yRoleToggle      = "toggle_button"
	A11yRoleCheckBox    = "check_box"
	A11yRoleRadioButton = "radio_button"
	A11yRoleTextField   = "text_field"
	A11yRoleLabel       = "label"
	A11yRoleMenu        = "menu"
	A11yRoleMenuItem    = "menu_item"
	A11yRoleMenuBar     = "menu_bar"
	A11yRoleList        = "list"
	A11yRoleListItem    = "list_item"
	A11yRoleTable       = "table"
	A11yRoleRow         = "row"
	A11yRoleCell        = "cell"
	A11yRoleTree        = "tree"
	A11yRoleTreeItem    = "tree_item"
	A11yRoleTab         = "tab"
	A11yRoleTabList     = "tab_list"
	A11yRoleWindow      = "window"
	A11yRoleDialog      = "dialog"
	A11yRolePanel       = "panel"
	A11yRoleToolbar     = "toolbar"
	A11yRoleScrollBar   = "scroll_bar"
	A11yRoleSlider      = "slider"
	A11yRoleSpinButton  = "spin_button"
	A11yRoleComboBox    = "combo_box"
	A11yRoleLink        = "link"
	A11yRoleImage       = "image"
	A11yRoleDocument    = "document"
	A11yRoleHeading     = "heading"
	A11yRoleSeparator   = "separator"
	A11yRoleStatusBar   = "status_bar"
	A11yRoleProgressBar = "progress_bar"
	A11yRoleApplication = "application"
	A11yRoleOther       = "other"
)

// A11yRoles lists every normalised role.
var A11yRoles = []string{
	A11yRoleButton, A11yRoleToggle, A11yRoleCheckBox, A11yRoleRadioButton, A11yRoleTextField, A11yRoleLabel,
	A11yRoleMenu, A11yRoleMenuItem, A11yRoleMenuBar, A11yRoleList, A11yRoleListItem, A11yRoleTable, A11yRoleRow, A11yRoleCell,
	A11yRoleTree, A11yRoleTreeItem, A11yRoleTab, A11yRoleTabList, A11yRoleWindow, A11yRoleDialog, A11yRolePanel,
	A11yRoleToolbar, A11yRoleScrollBar, A11yRoleSlider, A11yRoleSpinButton, A11yRoleComboBox, A11yRoleLink, A11yRoleImage,
	A11yRoleDocument, A11yRoleHeading, A11yRoleSeparator, A11yRoleStatusBar, A11yRoleProgressBar, A11yRoleApplication,
	A11yRoleOther,
}

// States an A11yNode may carry (the AT-SPI state names, snake_case).
const (
	A11yStateActive     = "active"
	A11yStateFocused    = "focused"
	A11yStateFocusable  = "focusable"
	A11yStateEnabled    = "enabled"
	A11yStateSensitive  = "sensitive"
	A11yStateChecked    = "checked"
	A11yStateSelected   = "selected"
	A11yStateExpandable = "expandable"
	A11yStateExpanded   = "expanded"
	A11yStateCollapsed  = "collapsed"
	A11yStateEditable   = "editable"
	A11yStateVisible    = "visible"
	A11yStateShowing    = "showing"
)

// The actions of A11yAction.
const (
	A11yActionPress          = "press"
	A11yActionFocus          = "focus"
	A11yActionSetValue       = "set_value"
	A11yActionSelect         = "select"
	A11yActionExpand         = "expand"
	A11yActionCollapse       = "collapse"
	A11yActionScrollIntoView = "scroll_into_view"
)

// A11yActions lists every action of A11yAction.
var A11yActions = []string{
	A11yActionPress, A11yActionFocus, A11yActionSetValue, A11yActionSelect, A11yActionExpand, A11yActionCollapse, A11yActionScrollIntoView,
}

// Bounds of the accessibility calls.
const (
	// DefaultA11yMaxNodes is a tree's max_nodes when the request says 0.
	DefaultA11yMaxNodes = 5000
	// MaxA11yNodes is the highest max_nodes a tree request may ask.
	MaxA11yNodes = 50000
	// MaxA11yFound is the most elements one find answers.
	MaxA11yFound = 50
)

// A11yNode is one element of a window's accessibility tree.
type A11yNode struct {
	// ID names the element and the snapshot it was read in; an action
	// needs nothing else. It is opaque, and stale once the snapshot is
	// forgotten (precondition_failed: take the tree again).
	ID string `json:"id"`
	// Parent is the ID of the parent node; "" for the window.
	Parent string `json:"parent,omitempty"`
	// Role is one of the normalised roles; RawRole the toolkit's own.
	Role        string   `json:"role"`
	RawRole     string   `json:"raw_role,omitempty"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Value       string   `json:"value,omitempty"`
	States      []string `json:"states,omitempty"`
	// Bounds are in screen pixels, the screenshot coordinate rule.
	Bounds  Rect     `json:"bounds"`
	Actions []string `json:"actions,omitempty"`
	// Error is set on a node whose subtree could not be read (a hung
	// application answers kind timeout); its children are absent.
	Error *Error `json:"error,omitempty"`
}

// A11yTree is a window's tree, flattened in pre-order.
type A11yTree struct {
	WindowID uint32     `json:"window_id"`
	Nodes    []A11yNode `json:"nodes"`
	// Truncated says max_depth or max_nodes cut the tree.
	Truncated bool `json:"truncated,omitempty"`
}

// A11yTreeRequest asks for the tree of one window.
type A11yTreeRequest struct {
	// WindowID is the X window; 0 = the focused window.
	WindowID uint32 `json:"window_id,omitempty"`
	// MaxDepth bounds the depth below the window (0 = no bound).
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxNodes bounds the nodes answered (0 = DefaultA11yMaxNodes).
	MaxNodes int `json:"max_nodes,omitempty"`
	// IncludeHidden keeps nodes that are neither showing nor visible.
	IncludeHidden bool `json:"include_hidden,omitempty"`
}

// A11yQuery finds elements of one window; every field set must match.
type A11yQuery struct {
	WindowID uint32 `json:"window_id,omitempty"`
	// Role is a normalised role (or the toolkit's raw role).
	Role string `json:"role,omitempty"`
	// Name matches the whole name; NameContains and ValueContains a part,
	// case-insensitively.
	Name          string   `json:"name,omitempty"`
	NameContains  string   `json:"name_contains,omitempty"`
	ValueContains string   `json:"value_contains,omitempty"`
	States        []string `json:"states,omitempty"`
}

// A11yFound is one element a query found.
type A11yFound struct {
	Node A11yNode `json:"node"`
	// Path names the element's ancestors from the window down, each by its
	// name or, when it has none, its role.
	Path []string `json:"path"`
}

// A11yAction acts on one element by its toolkit's own actions.
type A11yAction struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	// Value is the text or number of set_value.
	Value string `json:"value,omitempty"`
}

// The routes of the a11y feature: each takes a JSON body.
const (
	// PathA11yTree answers an A11yTree for an A11yTreeRequest.
	PathA11yTree = "/v1/a11y/tree"
	// PathA11yFind answers an A11yFindResult for an A11yQuery.
	PathA11yFind = "/v1/a11y/find"
	// PathA11yAction does an A11yAction and answers 204.
	PathA11yAction = "/v1/a11y/action"
)

// A11yFindResult is the answer of PathA11yFind: at most MaxA11yFound
// elements, in the tree's order.
type A11yFindResult struct {
	Elements []A11yFound `json:"elements"`
}
