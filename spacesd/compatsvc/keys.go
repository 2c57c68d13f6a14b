package compatsvc

import (
	"strings"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
)

// Key names. computer-server's clients name keys as pyautogui does
// ("enter", "ctrl", "pagedown", "win", "volumeup") or as pynput does
// ("cmd", "page_down", "ctrl_l", "media_volume_up"); the Python client
// turns "command" into "cmd". Each maps onto the X keysym name that
// capabilities/desktop presses. A single character stands for itself.

// keyAliases maps a bus key name (lower case) to ours.
var keyAliases = map[string]string{
	// Modifiers.
	"ctrl": "ctrl", "control": "ctrl", "ctrlleft": "Control_L", "ctrl_l": "Control_L", "ctrlright": "Control_R", "ctrl_r": "Control_R",
	"shift": "shift", "shiftleft": "Shift_L", "shift_l": "Shift_L", "shiftright": "Shift_R", "shift_r": "Shift_R",
	"alt": "alt", "altleft": "Alt_L", "alt_l": "Alt_L", "altright": "Alt_R", "alt_r": "Alt_R", "alt_gr": "ISO_Level3_Shift",
	"option": "alt", "optionleft": "Alt_L", "optionright": "Alt_R", "⌥": "alt",
	"win": "super", "winleft": "Super_L", "winright": "Super_R", "super": "super", "windows": "super",
	"cmd": "super", "command": "super", "cmd_l": "Super_L", "cmd_r": "Super_R", "⌘": "super",
	// Editing and navigation.
	"enter": "Return", "return": "Return", "\n": "Return", "\r": "Return",
	"tab": "Tab", "\t": "Tab", "space": "space", " ": "space",
	"esc": "Escape", "escape": "Escape", "backspace": "BackSpace", "\b": "BackSpace",
	"delete": "Delete", "del": "Delete", "insert": "Insert",
	"home": "Home", "end": "End", "up": "Up", "down": "Down", "left": "Left", "right": "Right",
	"pageup": "Page_Up", "page_up": "Page_Up", "pgup": "Page_Up", "page up": "Page_Up",
	"pagedown": "Page_Down", "page_down": "Page_Down", "pgdn": "Page_Down", "page down": "Page_Down",
	// Locks and system keys.
	"capslock": "Caps_Lock", "caps_lock": "Caps_Lock", "numlock": "Num_Lock", "num_lock": "Num_Lock",
	"scrolllock": "Scroll_Lock", "scroll_lock": "Scroll_Lock",
	"printscreen": "Print", "print_screen": "Print", "prtsc": "Print", "prtscr": "Print", "prntscrn": "Print", "print": "Print",
	"pause": "Pause", "menu": "Menu", "apps": "Menu", "help": "Help", "select": "Select", "execute": "Execute",
	"clear": "Clear",
	// Numpad.
	"add": "KP_Add", "subtract": "KP_Subtract", "multiply": "KP_Multiply", "divide": "KP_Divide",
	"decimal": "KP_Decimal", "separator": "KP_Separator",
	// Media.
	"volumeup": "XF86AudioRaiseVolume", "media_volume_up": "XF86AudioRaiseVolume",
	"volumedown": "XF86AudioLowerVolume", "media_volume_down": "XF86AudioLowerVolume",
	"volumemute": "XF86AudioMute", "media_volume_mute": "XF86AudioMute",
	"playpause": "XF86AudioPlay", "media_play_pause": "XF86AudioPlay",
	"nexttrack": "XF86AudioNext", "media_next": "XF86AudioNext",
	"prevtrack": "XF86AudioPrev", "media_previous": "XF86AudioPrev",
}

// modifierNames are the names (ours) that may come before the last key of
// a combination.
var modifierNames = map[string]bool{"ctrl": true, "shift": true, "alt": true, "super": true}

// maxKeyNameBytes bounds a key name; real ones are short.
const maxKeyNameBytes = 64

// keyName maps one bus key name onto ours.
func keyName(k string) (string, error) {
	switch {
	case k == "":
		return "", api.Errorf(api.KindInvalidArgument, "key is empty; name a key such as enter, ctrl or a")
	case len(k) > maxKeyNameBytes || !utf8.ValidString(k):
		return "", api.Errorf(api.KindInvalidArgument, "key %.20q is not a key name", k)
	}
	if ours, ok := keyAliases[strings.ToLower(k)]; ok {
		return ours, nil
	}
	if utf8.RuneCountInString(k) == 1 {
		return k, nil // a character stands for itself
	}
	low := strings.ToLower(k)
	if n, ok := strings.CutPrefix(low, "num"); ok && len(n) == 1 && n[0] >= '0' && n[0] <= '9' {
		return "KP_" + n, nil
	}
	if len(low) >= 2 && low[0] == 'f' && strings.Trim(low[1:], "0123456789") == "" {
		return strings.ToUpper(low), nil // F1-F24; the desktop checks the range
	}
	// Anything else goes to the desktop as it is: it knows X's own names
	// (Return, Page_Up, XF86AudioMute) and refuses the unknown ones.
	return k, nil
}
