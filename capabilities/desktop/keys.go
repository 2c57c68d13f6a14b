package desktop

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
)

// maxKeyComboLen bounds a key combination string; real ones are short.
const maxKeyComboLen = 128

// Keysyms the daemon names (X11 keysymdef.h).
const (
	ksShiftL   = 0xffe1
	ksControlL = 0xffe3
	ksAltL     = 0xffe9
	ksSuperL   = 0xffeb
	ksReturn   = 0xff0d
	ksTab      = 0xff09
)

// modifierNames maps the modifier words of a combination to keysyms.
var modifierNames = map[string]uint32{
	"ctrl": ksControlL, "control": ksControlL, "ctl": ksControlL,
	"shift": ksShiftL,
	"alt":   ksAltL, "meta": ksAltL, "option": ksAltL, "opt": ksAltL,
	"super": ksSuperL, "win": ksSuperL, "windows": ksSuperL, "cmd": ksSuperL, "command": ksSuperL,
}

// keyNames maps key names (lower case) to keysyms; single characters need
// no entry. Common aliases from other tools are accepted too.
var keyNames = map[string]uint32{
	"return": ksReturn, "enter": ksReturn, "tab": ksTab,
	"escape": 0xff1b, "esc": 0xff1b, "backspace": 0xff08, "delete": 0xffff, "del": 0xffff,
	"insert": 0xff63, "ins": 0xff63, "home": 0xff50, "end": 0xff57,
	"left": 0xff51, "up": 0xff52, "right": 0xff53, "down": 0xff54,
	"page_up": 0xff55, "pageup": 0xff55, "prior": 0xff55, "pgup": 0xff55,
	"page_down": 0xff56, "pagedown": 0xff56, "next": 0xff56, "pgdn": 0xff56,
	"space": 0x20, "menu": 0xff67, "print": 0xff61, "printscreen": 0xff61, "pause": 0xff13,
	"caps_lock": 0xffe5, "capslock": 0xffe5, "num_lock": 0xff7f, "scroll_lock": 0xff14,
	"kp_enter": 0xff8d,
	"minus":    '-', "plus": '+', "equal": '=', "comma": ',', "period": '.', "slash": '/',
	"backslash": '\\', "semicolon": ';', "apostrophe": '\'', "grave": '`',
	"bracketleft": '[', "bracketright": ']', "asterisk": '*', "underscore": '_',
	"shift_l": ksShiftL, "shift_r": 0xffe2, "control_l": ksControlL, "control_r": 0xffe4,
	"alt_l": ksAltL, "alt_r": 0xffea, "super_l": ksSuperL, "super_r": 0xffec,
	"iso_level3_shift": 0xfe03, "help": 0xff6a, "select": 0xff60, "execute": 0xff62, "clear": 0xff0b, "break": 0xff6b,
	"kp_add": 0xffab, "kp_subtract": 0xffad, "kp_multiply": 0xffaa, "kp_divide": 0xffaf,
	"kp_decimal": 0xffae, "kp_separator": 0xffac,
	// Media keys (XF86keysym.h).
	"xf86audioraisevolume": 0x1008ff13, "xf86audiolowervolume": 0x1008ff11, "xf86audiomute": 0x1008ff12,
	"xf86audioplay": 0x1008ff14, "xf86audionext": 0x1008ff17, "xf86audioprev": 0x1008ff16,
}

func init() {
	for i := 1; i <= 24; i++ {
		keyNames[fmt.Sprintf("f%d", i)] = 0xffbe + uint32(i-1)
	}
	for i := range 10 {
		keyNames[fmt.Sprintf("kp_%d", i)] = 0xffb0 + uint32(i)
	}
}

// Combo is a parsed key combination: modifiers held while Key is pressed.
type Combo struct {
	Mods []uint32
	Key  uint32
}

// ParseKeyCombo parses "Return", "ctrl+shift+t", "alt+F4", "ctrl++" into
// keysyms. Names are case-insensitive; a single character stands for itself
// (so "ctrl+T" is ctrl+shift+t, as the character T needs shift).
func ParseKeyCombo(s string) (Combo, error) {
	var c Combo
	if s == "" {
		return c, api.Errorf(api.KindInvalidArgument, "key is empty; give a key like \"Return\" or \"ctrl+shift+t\"")
	}
	if len(s) > maxKeyComboLen || !utf8.ValidString(s) {
		return c, api.Errorf(api.KindInvalidArgument, "key %.40q is not a key combination", s)
	}
	var parts []string
	switch {
	// "+" and "ctrl++" name the plus key itself.
	case s == "+":
		parts = []string{"+"}
	case strings.HasSuffix(s, "++"):
		parts = append(strings.Split(s[:len(s)-2], "+"), "+")
	default:
		parts = strings.Split(s, "+")
	}
	seen := map[uint32]bool{}
	for i, p := range parts {
		last := i == len(parts)-1
		word := strings.TrimSpace(p)
		if word == "" {
			return c, api.Errorf(api.KindInvalidArgument, "key %q has an empty part; join keys with + as in ctrl+shift+t", s)
		}
		if !last {
			m, ok := modifierNames[strings.ToLower(word)]
			if !ok {
				return c, api.Errorf(api.KindInvalidArgument, "key %q: %q is not a modifier (ctrl, shift, alt, super)", s, word)
			}
			if seen[m] {
				return c, api.Errorf(api.KindInvalidArgument, "key %q names %s twice", s, word)
			}
			seen[m] = true
			c.Mods = append(c.Mods, m)
			continue
		}
		ks, ok := keysymOfName(word)
		if !ok {
			return c, api.Errorf(api.KindInvalidArgument, "key %q: unknown key %q (a character, or a name such as Return, Tab, Escape, F1, Left, Page_Up)", s, word)
		}
		c.Key = ks
	}
	return c, nil
}

func keysymOfName(word string) (uint32, bool) {
	if r, n := utf8.DecodeRuneInString(word); n == len(word) && r != utf8.RuneError {
		if ks, ok := keysymOfRune(r); ok {
			return ks, true
		}
		return 0, false
	}
	if ks, ok := keyNames[strings.ToLower(word)]; ok {
		return ks, true
	}
	if m, ok := modifierNames[strings.ToLower(word)]; ok {
		return m, true // a lone modifier press, e.g. "super"
	}
	return 0, false
}

// keysymOfRune is the keysym that types r: Latin-1 keysyms equal their code
// point, everything else uses the Unicode keysym range.
func keysymOfRune(r rune) (uint32, bool) {
	switch {
	case r == '\n' || r == '\r':
		return ksReturn, true
	case r == '\t':
		return ksTab, true
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r > unicode.MaxRune:
		return 0, false
	case r < 0x100:
		return uint32(r), true
	}
	return 0x01000000 | uint32(r), true
}
