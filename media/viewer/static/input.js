// Input from the page to the Space, for a viewer that may send it.
//
// Keyboard: a key that types text goes as that text (the field's input
// event, an IME's composition, a dead key's result), so that any layout
// on either side types exactly what the person sees; every other key
// (Enter, arrows, F-keys, shortcuts) goes by its place (keys.js), held
// down and let go as the person does. Modifiers go lazily: they are
// pressed in the Space only before a key, button or wheel that needs
// them, and let go before text is typed, which carries its own shift.
//
// Pointer: moves on the unordered pointer channel; buttons and the wheel
// on the ordered input channel, each with its own position (the two
// channels are not ordered with each other). Pixels of the page map to
// stream pixels exactly (geometry.js). Double clicks are the Space's own
// reading of two quick clicks, as on a local machine.

import { frameRect, toStream } from './geometry.js';
import { isPaste, keyName, modifiers, typesText } from './keys.js';

// A text message carries at most this many characters, so that it stays
// far below the daemon's 64 KiB per message (api.MaxStreamMessageBytes)
// however the characters encode; a paste is cut into such messages.
const maxTextChars = 4000;
// maxPasteChars bounds one paste: the daemon types at most this many
// characters per message batch anyway (desktop.MaxTypeRunes), and typing
// more takes minutes.
const maxPasteChars = 100000;
// Wheel: pixels of scrolling per click of a wheel in the Space (a
// mouse's notch is about 100 in most browsers); a line of a line-mode
// wheel is a third of a click, as X programs scroll three lines a click.
const wheelClickPixels = 100;
const wheelLinePixels = wheelClickPixels / 3;
// pointerBacklog: moves are skipped while the pointer channel holds more
// than this unsent; only the latest position matters.
const pointerBacklog = 16 << 10;

const buttonNames = ['left', 'middle', 'right'];

const modifierFlags = {
	shiftKey: ['ShiftLeft', 'ShiftRight'],
	ctrlKey: ['ControlLeft', 'ControlRight'],
	altKey: ['AltLeft', 'AltRight'],
	metaKey: ['MetaLeft', 'MetaRight'],
};

export class Input {
	// send(channel, message) sends on 'input' or 'pointer' (and reports the
	// channel's backlog with backlog(channel)); onPointer(clientX,
	// clientY) tells the cursor where the local pointer is; notice shows
	// a short message.
	constructor({ stage, video, field, send, backlog, onPointer, notice }) {
		Object.assign(this, { stage, video, field, send, backlog, onPointer, notice });
		this.localMods = new Set(); // modifier codes down on this keyboard
		this.remoteMods = new Set(); // modifier codes held in the Space
		this.keysDown = new Map(); // code -> key name held in the Space
		this.buttonsDown = new Set(); // button names held in the Space
		this.tap = null; // a modifier pressed alone so far
		this.composing = false;
		this.wheel = { x: 0, y: 0, at: 0 };
		this.last = null; // last stream point the pointer was sent to
		this.pointerAt = null; // the pointer's last position on the page, exact
	}

	attach() {
		const s = this.stage;
		const f = this.field;
		s.addEventListener('pointerdown', (e) => this.pointerDown(e));
		s.addEventListener('pointermove', (e) => this.pointerMove(e));
		s.addEventListener('pointerup', (e) => this.pointerUp(e));
		s.addEventListener('pointercancel', (e) => this.pointerUp(e));
		s.addEventListener('lostpointercapture', () => this.releaseButtons());
		s.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
		s.addEventListener('contextmenu', (e) => e.preventDefault());
		s.addEventListener('auxclick', (e) => e.preventDefault());
		f.addEventListener('keydown', (e) => this.keyDown(e));
		f.addEventListener('keyup', (e) => this.keyUp(e));
		f.addEventListener('input', (e) => this.onInput(e));
		f.addEventListener('compositionstart', () => { this.composing = true; });
		f.addEventListener('compositionend', (e) => this.compositionEnd(e));
		f.addEventListener('paste', (e) => this.onPaste(e));
		f.addEventListener('blur', () => this.releaseAll());
		window.addEventListener('blur', () => this.releaseAll());
		document.addEventListener('visibilitychange', () => {
			if (document.hidden) {
				this.releaseAll();
			}
		});
		this.focus();
	}

	focus() {
		if (document.activeElement !== this.field) {
			this.field.focus({ preventScroll: true });
		}
	}

	// point maps an event's position to the stream, or null before the
	// first frame. Pointer events carry fractions of a CSS pixel, which
	// matter where a stream pixel is smaller than one (a stream shown
	// smaller than its size, a zoomed browser); mouse and wheel events are
	// whole pixels, so theirs is the pointer's last exact position when
	// that is where they happened.
	point(e) {
		const g = frameRect(this.video);
		if (!g) {
			return null;
		}
		let x = e.clientX;
		let y = e.clientY;
		const at = this.pointerAt;
		if (!(e instanceof PointerEvent) && at && Math.abs(at.x - x) < 1 && Math.abs(at.y - y) < 1) {
			x = at.x;
			y = at.y;
		}
		return toStream(g, x, y);
	}

	pointerMove(e) {
		this.pointerAt = { x: e.clientX, y: e.clientY };
		const p = this.point(e);
		this.stage.classList.toggle('over', !!p && p.inside);
		if (!p || (!p.inside && this.buttonsDown.size === 0)) {
			return;
		}
		this.onPointer(e.clientX, e.clientY);
		this.movePointer(p);
	}

	movePointer(p) {
		if (this.last && this.last.x === p.x && this.last.y === p.y) {
			return;
		}
		if (this.backlog('pointer') > pointerBacklog) {
			return;
		}
		this.last = { x: p.x, y: p.y };
		this.send('pointer', { type: 'move', x: p.x, y: p.y });
	}

	pointerDown(e) {
		e.preventDefault(); // no text selection, no drag of the video
		this.focus();
		this.pointerAt = { x: e.clientX, y: e.clientY };
		const button = buttonNames[e.button];
		const p = this.point(e);
		if (!button || !p || !p.inside) {
			return;
		}
		this.stage.setPointerCapture(e.pointerId);
		this.onPointer(e.clientX, e.clientY);
		this.syncModifiers(e);
		this.buttonsDown.add(button);
		this.last = { x: p.x, y: p.y };
		this.send('input', { type: 'button', x: p.x, y: p.y, button, action: 'down' });
	}

	pointerUp(e) {
		const button = buttonNames[e.button];
		if (!button || !this.buttonsDown.has(button)) {
			return;
		}
		const p = this.point(e) || this.last || { x: 0, y: 0 };
		this.buttonsDown.delete(button);
		this.send('input', { type: 'button', x: p.x, y: p.y, button, action: 'up' });
	}

	releaseButtons() {
		const p = this.last || { x: 0, y: 0 };
		for (const button of this.buttonsDown) {
			this.send('input', { type: 'button', x: p.x, y: p.y, button, action: 'up' });
		}
		this.buttonsDown.clear();
	}

	onWheel(e) {
		e.preventDefault(); // the page itself never scrolls
		const p = this.point(e);
		if (!p || !p.inside) {
			return;
		}
		let scale = 1;
		if (e.deltaMode === WheelEvent.DOM_DELTA_LINE) {
			scale = wheelLinePixels;
		} else if (e.deltaMode === WheelEvent.DOM_DELTA_PAGE) {
			scale = wheelClickPixels * 3;
		}
		const w = this.wheel;
		// After a pause the first movement clicks at once, so that a
		// touchpad's small steps are not lost waiting for a whole click.
		if (e.timeStamp - w.at > 250) {
			w.x = Math.sign(e.deltaX) * wheelClickPixels * 0.99;
			w.y = Math.sign(e.deltaY) * wheelClickPixels * 0.99;
		}
		w.at = e.timeStamp;
		w.x += e.deltaX * scale;
		w.y += e.deltaY * scale;
		const dx = Math.trunc(w.x / wheelClickPixels);
		const dy = Math.trunc(w.y / wheelClickPixels);
		if (dx === 0 && dy === 0) {
			return;
		}
		w.x -= dx * wheelClickPixels;
		w.y -= dy * wheelClickPixels;
		this.syncModifiers(e);
		this.last = { x: p.x, y: p.y };
		this.send('input', { type: 'scroll', x: p.x, y: p.y, dx, dy });
	}

	keyDown(e) {
		this.trackModifiers(e);
		if (modifiers[e.code]) {
			e.preventDefault();
			if (!e.repeat) {
				this.localMods.add(e.code);
				this.tap = e.code;
			}
			return;
		}
		this.tap = null;
		if (isPaste(e)) {
			return; // the browser pastes: see onPaste
		}
		if (typesText(e)) {
			return; // the text comes as the field's input event
		}
		e.preventDefault();
		const name = keyName(e);
		// The Space repeats a held key itself, as it does for its own
		// keyboard: the browser's repeats would double it.
		if (!name || e.repeat || this.keysDown.has(e.code)) {
			return;
		}
		this.syncModifiers(e);
		this.keysDown.set(e.code, name);
		this.send('input', { type: 'key', key: name, action: 'down' });
	}

	keyUp(e) {
		if (modifiers[e.code]) {
			e.preventDefault();
			this.localMods.delete(e.code);
			if (this.remoteMods.has(e.code)) {
				this.remoteMods.delete(e.code);
				this.send('input', { type: 'key', key: modifiers[e.code], action: 'up' });
			} else if (this.tap === e.code) {
				// A modifier pressed and let go alone (Super opening a
				// menu): pressed in the Space now, with what else is held.
				this.syncModifiers(e);
				this.send('input', { type: 'key', key: modifiers[e.code], action: 'press' });
			}
			this.tap = null;
			return;
		}
		const name = this.keysDown.get(e.code);
		if (name) {
			e.preventDefault();
			this.keysDown.delete(e.code);
			this.send('input', { type: 'key', key: name, action: 'up' });
		}
	}

	// trackModifiers corrects the modifiers known to be down from an
	// event's flags: a key let go while the page had no focus sends no
	// keyup here.
	trackModifiers(e) {
		for (const [flag, codes] of Object.entries(modifierFlags)) {
			const down = codes.filter((c) => this.localMods.has(c));
			if (!e[flag]) {
				down.forEach((c) => this.localMods.delete(c));
			} else if (down.length === 0 && !codes.includes(e.code)) {
				this.localMods.add(codes[0]);
			}
		}
	}

	// syncModifiers holds in the Space exactly the modifiers held here.
	syncModifiers(e) {
		this.trackModifiers(e);
		this.tap = null;
		for (const code of [...this.remoteMods]) {
			if (!this.localMods.has(code)) {
				this.remoteMods.delete(code);
				this.send('input', { type: 'key', key: modifiers[code], action: 'up' });
			}
		}
		for (const code of this.localMods) {
			if (!this.remoteMods.has(code)) {
				this.remoteMods.add(code);
				this.send('input', { type: 'key', key: modifiers[code], action: 'down' });
			}
		}
	}

	// releaseModifiers lets go of the modifiers held in the Space: text
	// brings its own shift, and a held Shift or AltGr would change it.
	releaseModifiers() {
		for (const code of this.remoteMods) {
			this.send('input', { type: 'key', key: modifiers[code], action: 'up' });
		}
		this.remoteMods.clear();
	}

	onInput(e) {
		if (this.composing || e.isComposing) {
			return; // the composition's end brings its text
		}
		if (e.inputType === 'insertText' || e.inputType === 'insertReplacementText') {
			this.typeText(e.data || '');
		}
		this.field.value = '';
	}

	compositionEnd(e) {
		this.composing = false;
		this.typeText(e.data || '');
		this.field.value = '';
	}

	onPaste(e) {
		e.preventDefault();
		let text = e.clipboardData ? e.clipboardData.getData('text/plain') : '';
		if (!text) {
			return;
		}
		if (text.length > maxPasteChars) {
			this.notice(`Pasted the first ${maxPasteChars} of ${text.length} characters.`);
			text = text.slice(0, maxPasteChars);
		}
		this.typeText(text);
	}

	typeText(text) {
		if (!text) {
			return;
		}
		this.tap = null;
		this.releaseModifiers();
		// Whole characters per message (a surrogate pair is one), and CR LF
		// kept together: the daemon types it as one Return.
		const chars = [...text.replace(/\r\n?/g, '\n')];
		for (let i = 0; i < chars.length; i += maxTextChars) {
			this.send('input', { type: 'text', text: chars.slice(i, i + maxTextChars).join('') });
		}
	}

	// releaseAll lets go of everything held in the Space: the page lost
	// the focus, and the keys' keyups will not come here.
	releaseAll() {
		for (const name of this.keysDown.values()) {
			this.send('input', { type: 'key', key: name, action: 'up' });
		}
		this.keysDown.clear();
		this.releaseModifiers();
		this.localMods.clear();
		this.releaseButtons();
		this.tap = null;
	}

	// reset forgets what was held: a new session starts with nothing
	// down in the Space (the daemon let go of the old one's keys).
	reset() {
		this.keysDown.clear();
		this.remoteMods.clear();
		this.buttonsDown.clear();
		this.last = null;
	}
}
