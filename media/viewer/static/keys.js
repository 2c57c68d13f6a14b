// Keys by their place on the keyboard (KeyboardEvent.code), named as the
// daemon's key messages take them (X keysym names; desktop.ParseKeyCombo).
// A key that types text goes as the text instead (see input.js), so the
// keyboard layouts of the page and of the Space need not match.

const named = {
	Escape: 'Escape', Tab: 'Tab', Backspace: 'BackSpace', Enter: 'Return', Space: 'space',
	CapsLock: 'Caps_Lock', NumLock: 'Num_Lock', ScrollLock: 'Scroll_Lock',
	PrintScreen: 'Print', Pause: 'Pause', ContextMenu: 'Menu',
	Insert: 'Insert', Delete: 'Delete', Home: 'Home', End: 'End', PageUp: 'Page_Up', PageDown: 'Page_Down',
	ArrowUp: 'Up', ArrowDown: 'Down', ArrowLeft: 'Left', ArrowRight: 'Right',
	Backquote: 'grave', Minus: 'minus', Equal: 'equal', BracketLeft: 'bracketleft', BracketRight: 'bracketright',
	Backslash: 'backslash', Semicolon: 'semicolon', Quote: 'apostrophe', Comma: 'comma', Period: 'period',
	Slash: 'slash', IntlBackslash: '<',
	NumpadEnter: 'KP_Enter', NumpadDivide: 'slash', NumpadMultiply: 'asterisk', NumpadSubtract: 'minus',
	NumpadAdd: 'plus', NumpadDecimal: 'period', NumpadEqual: 'equal',
};

// Modifier keys, held as keys of their own while another key or a button
// is pressed.
export const modifiers = {
	ShiftLeft: 'Shift_L', ShiftRight: 'Shift_R', ControlLeft: 'Control_L', ControlRight: 'Control_R',
	AltLeft: 'Alt_L', AltRight: 'Alt_R', MetaLeft: 'Super_L', MetaRight: 'Super_R',
};

// keyName names the key of a keydown or keyup, or '' for a key the
// daemon has no name for.
export function keyName(e) {
	const code = e.code || '';
	if (modifiers[code]) {
		return modifiers[code];
	}
	// A shortcut letter goes as the letter printed on the key where that
	// is a Latin one (ctrl+a on an AZERTY keyboard is ctrl+a), otherwise
	// as the US key at its place (ctrl+c on a Russian keyboard).
	if (/^[a-zA-Z]$/.test(e.key || '')) {
		return e.key.toLowerCase();
	}
	let m = /^Key([A-Z])$/.exec(code);
	if (m) {
		return m[1].toLowerCase();
	}
	m = /^(?:Digit|Numpad)([0-9])$/.exec(code);
	if (m) {
		return m[1];
	}
	m = /^F([0-9]{1,2})$/.exec(code);
	if (m && +m[1] >= 1 && +m[1] <= 24) {
		return 'F' + m[1];
	}
	return named[code] || '';
}

// typesText says whether a keydown's key produces text, which then comes
// as the field's input event (or an IME's composition): a character with
// no modifier but Shift or AltGr, a dead key, or a key an IME takes.
export function typesText(e) {
	if (e.isComposing || e.keyCode === 229 || e.key === 'Dead' || e.key === 'Process') {
		return true;
	}
	const altGraph = e.getModifierState && e.getModifierState('AltGraph');
	if ((e.ctrlKey || e.metaKey || e.altKey) && !altGraph) {
		return false;
	}
	return [...(e.key || '')].length === 1;
}

// isPaste says whether a keydown asks the browser to paste, which then
// fires the field's paste event with the clipboard's text.
export function isPaste(e) {
	const mod = e.ctrlKey || e.metaKey;
	return (mod && !e.altKey && e.code === 'KeyV') || (e.shiftKey && !mod && e.code === 'Insert');
}
