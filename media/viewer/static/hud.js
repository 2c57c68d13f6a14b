// The state overlay: connection state, resolution, frame rate, round
// trip, bitrate, the way the media takes; who is watching; a notice for what ends the viewer; short flashes for what
// the person should know (a paste cut short, an input the Space refused).

const quietAfter = 3000; // ms connected before the overlay fades
const flashFor = 4000;

export class Hud {
	constructor(doc) {
		this.doc = doc;
		this.el = doc.getElementById('hud');
		this.stateEl = doc.getElementById('state');
		this.statsEl = doc.getElementById('stats');
		this.modeEl = doc.getElementById('mode');
		this.notice = doc.getElementById('notice');
		this.quietTimer = 0;
		this.flashTimer = 0;
		this.flashing = false;
		this.last = '';
		this.stateText = '';
		this.pathText = '';
	}

	viewOnly() {
		this.modeEl.hidden = false;
	}

	// who lists everyone watching ({name, role, you, viewOnly}), as text
	// (names are anyone's to choose); hidden while this page is alone.
	who(viewers) {
		const list = this.doc.getElementById('who');
		list.replaceChildren(...viewers.map((v) => {
			const li = this.doc.createElement('li');
			li.dataset.name = v.name;
			if (v.you) {
				li.dataset.you = 'true';
			}
			const role = v.role || (v.viewOnly ? 'view only' : '');
			li.textContent = v.name + (role ? ` · ${role}` : '') + (v.you ? ' (you)' : '');
			return li;
		}));
		list.hidden = viewers.length < 2;
	}

	// state is one of connecting, connected, reconnecting, failed; the
	// body's data-state carries it for the style (and for tests).
	state(state, text) {
		this.doc.body.dataset.state = state;
		this.stateText = text;
		this.showState();
		if (state === 'connected') {
			this.wake();
		} else {
			clearTimeout(this.quietTimer);
			this.el.classList.remove('quiet');
		}
	}

	// path shows the way the media took (the control message "path":
	// {media, local, remote, protocol}) beside the connected state, or
	// forgets it (null, as a new connection starts). The body's data-path
	// carries its media (direct or turn) for tests.
	path(p) {
		if (!p || typeof p.media !== 'string') {
			this.pathText = '';
			delete this.doc.body.dataset.path;
		} else {
			this.doc.body.dataset.path = p.media;
			if (p.media === 'turn') {
				const proto = /^[a-z]{1,8}$/.test(p.protocol || '') ? ` (${p.protocol})` : '';
				this.pathText = `via TURN relay${proto}`;
			} else if (p.media === 'direct') {
				this.pathText = 'direct';
			} else {
				this.pathText = '';
			}
		}
		this.showState();
	}

	showState() {
		const connected = this.doc.body.dataset.state === 'connected';
		this.stateEl.textContent = connected && this.pathText ? `${this.stateText} · ${this.pathText}` : this.stateText;
	}

	// stats shows the figures of the last second.
	stats({ width, height, fps, rtt, kbps }) {
		const parts = [];
		if (width && height) {
			parts.push(`${width}×${height}`);
		}
		if (fps !== undefined) {
			parts.push(`${Math.round(fps)} fps`);
		}
		if (rtt !== undefined) {
			parts.push(`RTT ${rtt < 10 ? rtt.toFixed(1) : Math.round(rtt)} ms`);
		}
		if (kbps !== undefined) {
			parts.push(kbps >= 1000 ? `${(kbps / 1000).toFixed(1)} Mbit/s` : `${Math.round(kbps)} kbit/s`);
		}
		this.last = parts.join(' · ');
		if (!this.flashing) {
			this.statsEl.textContent = this.last;
		}
	}

	flash(text) {
		this.flashing = true;
		this.statsEl.textContent = text;
		this.wake();
		clearTimeout(this.flashTimer);
		this.flashTimer = setTimeout(() => {
			this.flashing = false;
			this.statsEl.textContent = this.last;
		}, flashFor);
	}

	// wake shows the overlay fully for a while.
	wake() {
		this.el.classList.remove('quiet');
		clearTimeout(this.quietTimer);
		this.quietTimer = setTimeout(() => {
			if (this.doc.body.dataset.state === 'connected') {
				this.el.classList.add('quiet');
			}
		}, quietAfter);
	}

	// fail ends the viewer with a notice; reason names it for the style
	// and tests (expired, invalid, gone, unsupported, refused, link).
	fail(reason, title, text) {
		this.state('failed', title);
		this.notice.dataset.reason = reason;
		this.doc.getElementById('notice-title').textContent = title;
		this.doc.getElementById('notice-text').textContent = text;
		this.notice.hidden = false;
	}
}
