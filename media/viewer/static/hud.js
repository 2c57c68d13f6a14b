// The state overlay: connection state, resolution, frame rate, round
// trip, bitrate; a notice for what ends the viewer; short flashes for what
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
	}

	viewOnly() {
		this.modeEl.hidden = false;
	}

	// state is one of connecting, connected, reconnecting, failed; the
	// body's data-state carries it for the style (and for tests).
	state(state, text) {
		this.doc.body.dataset.state = state;
		this.stateEl.textContent = text;
		if (state === 'connected') {
			this.wake();
		} else {
			clearTimeout(this.quietTimer);
			this.el.classList.remove('quiet');
		}
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
