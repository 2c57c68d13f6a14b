// Presence: the others watching the Space. The page tells the daemon
// where its own pointer is over the picture (control message "peer", in
// stream pixels, at most one per animation frame; {away: true} once it
// left), view only or not: it is presence, not input. The daemon tells
// the page who is there ("who") and where the other viewers of the same
// target point ("peer", with their session's id, in this page's stream
// pixels): each is drawn as a small arrow with its name, placed as the
// Space's cursor is (the pixel's corner, by the frame's mapping).

import { frameRect, toPage, toStream } from './geometry.js';

export class Peers {
	// stage: the element the pointer moves over and the cursors go in;
	// send(msg): a control message to the daemon; hud: the who list.
	constructor({ stage, video, send, hud }) {
		this.stage = stage;
		this.video = video;
		this.send = send;
		this.hud = hud;
		this.viewers = new Map(); // id -> {name, role, you}
		this.cursors = new Map(); // id -> {el, x, y} (x null: away)
		this.pending = null;
		this.sent = '';
		this.frame = 0;
		stage.addEventListener('pointermove', (e) => this.onLocal(e.clientX, e.clientY));
		stage.addEventListener('pointerleave', () => this.queue({ away: true }));
		window.addEventListener('resize', () => this.placeAll());
		video.addEventListener('resize', () => this.placeAll());
	}

	// onLocal is the local pointer (client pixels).
	onLocal(clientX, clientY) {
		const g = frameRect(this.video);
		if (!g) {
			return;
		}
		const p = toStream(g, clientX, clientY);
		this.queue(p.inside ? { x: p.x, y: p.y } : { away: true });
	}

	// queue keeps the latest pointer and sends it at the next animation
	// frame, unless it is what was sent last.
	queue(peer) {
		this.pending = peer;
		if (this.frame) {
			return;
		}
		this.frame = requestAnimationFrame(() => {
			this.frame = 0;
			const p = this.pending;
			this.pending = null;
			const key = JSON.stringify(p);
			if (p && key !== this.sent) {
				this.sent = key;
				this.send({ type: 'peer', peer: p });
			}
		});
	}

	// reset forgets what was sent (a new connection: the daemon knows
	// nothing of this page's pointer yet).
	reset() {
		this.sent = '';
	}

	// onWho takes the list of everyone watching; cursors of those gone go.
	onWho(viewers) {
		if (!Array.isArray(viewers)) {
			return;
		}
		this.viewers = new Map();
		for (const v of viewers) {
			if (v && typeof v.id === 'string') {
				this.viewers.set(v.id, { name: String(v.name || ''), role: String(v.role || ''), you: v.you === true, viewOnly: v.view_only === true });
			}
		}
		for (const [id, c] of this.cursors) {
			const v = this.viewers.get(id);
			if (!v || v.you) {
				c.el.remove();
				this.cursors.delete(id);
			} else {
				this.label(c, v.name);
			}
		}
		this.hud.who([...this.viewers.values()]);
	}

	// onPeer takes another viewer's pointer.
	onPeer(p) {
		if (!p || typeof p.id !== 'string') {
			return;
		}
		const v = this.viewers.get(p.id);
		if (v && v.you) {
			return;
		}
		let c = this.cursors.get(p.id);
		if (!c) {
			const el = document.createElement('div');
			el.className = 'peer-cursor';
			el.dataset.id = p.id;
			el.appendChild(document.createElement('span')).className = 'peer-arrow';
			el.appendChild(document.createElement('span')).className = 'peer-name';
			c = { el, x: null, y: null, name: null };
			this.cursors.set(p.id, c);
			this.stage.appendChild(el);
		}
		this.label(c, v ? v.name : '');
		if (p.away || !Number.isFinite(p.x) || !Number.isFinite(p.y)) {
			c.x = null;
			c.y = null;
		} else {
			c.x = p.x;
			c.y = p.y;
		}
		this.place(c);
	}

	// label names a cursor (as text: a name is anyone's to choose).
	label(c, name) {
		if (c.name === name) {
			return;
		}
		c.name = name;
		c.el.dataset.name = name;
		c.el.lastChild.textContent = name;
		c.el.style.setProperty('--peer-hue', String(hue(name)));
	}

	place(c) {
		const g = frameRect(this.video);
		if (!g || c.x === null || c.x < 0 || c.y < 0 || c.x >= g.vw || c.y >= g.vh) {
			c.el.hidden = true;
			return;
		}
		const at = toPage(g, c.x, c.y);
		c.el.style.transform = `translate(${at.x}px, ${at.y}px)`;
		c.el.hidden = false;
	}

	placeAll() {
		for (const c of this.cursors.values()) {
			this.place(c);
		}
	}
}

// hue gives each name a colour of its own, the same on every page.
function hue(name) {
	let h = 0;
	for (const ch of name) {
		h = (h * 31 + ch.codePointAt(0)) % 360;
	}
	return h;
}
