// The Space's cursor, drawn over the video (the stream's frames hold no
// cursor). The daemon sends the pointer's position in stream pixels, and
// each shape once, by serial (api.ViewerCursor); the page keeps the last
// maxShapes shapes in the order they came, as the daemon counts them.
//
// While the person moves the mouse over the picture the cursor follows
// the local pointer at once (their motion reaches the Space a round trip
// later, and the Space's answer would pull the cursor back along its
// path); otherwise it is where the Space says, which shows what another
// viewer or an agent does with the pointer.

import { frameRect, toPage } from './geometry.js';

const maxShapes = 32; // api.MaxCursorShapes
// localLead is how long after a local move the Space's positions are
// taken as echoes of it.
const localLead = 300;

export class CursorView {
	constructor(canvas, video) {
		this.canvas = canvas;
		this.video = video;
		this.shapes = new Map(); // serial -> {bitmap|null, w, h, hotX, hotY}
		this.serial = null;
		this.remote = null; // {x, y} in stream pixels
		this.local = null; // {clientX, clientY, at}
		this.frame = 0;
		window.addEventListener('resize', () => this.schedule());
		video.addEventListener('resize', () => this.schedule());
	}

	// onMessage takes a control message of type cursor.
	onMessage(c) {
		if (c.shape) {
			this.addShape(c.serial, c.shape);
		}
		this.serial = c.serial;
		this.remote = { x: c.x, y: c.y };
		this.schedule();
	}

	addShape(serial, s) {
		const entry = { bitmap: null, w: s.width, h: s.height, hotX: s.hot_x, hotY: s.hot_y };
		this.shapes.delete(serial);
		this.shapes.set(serial, entry);
		while (this.shapes.size > maxShapes) {
			this.shapes.delete(this.shapes.keys().next().value);
		}
		if (!s.png) {
			return; // too large to send: the arrow below stands in
		}
		const bytes = Uint8Array.from(atob(s.png), (ch) => ch.charCodeAt(0));
		createImageBitmap(new Blob([bytes], { type: 'image/png' })).then((bitmap) => {
			entry.bitmap = bitmap;
			if (this.serial === serial) {
				this.drawn = null;
				this.schedule();
			}
		}, () => {});
	}

	// onLocal is the local pointer over the picture (client pixels).
	onLocal(clientX, clientY) {
		this.local = { clientX, clientY, at: performance.now() };
		this.schedule();
	}

	schedule() {
		if (!this.frame) {
			this.frame = requestAnimationFrame(() => {
				this.frame = 0;
				this.draw();
			});
		}
	}

	draw() {
		const g = frameRect(this.video);
		const shape = this.shapes.get(this.serial);
		if (!g || !this.remote || this.serial === null) {
			this.canvas.hidden = true;
			return;
		}
		let at;
		if (this.local && performance.now() - this.local.at < localLead) {
			at = { x: this.local.clientX, y: this.local.clientY };
		} else {
			if (this.remote.x < 0 || this.remote.y < 0 || this.remote.x >= g.vw || this.remote.y >= g.vh) {
				this.canvas.hidden = true; // outside a window stream's window
				return;
			}
			// The pixel's corner: the hot spot pixel covers the pointer.
			at = toPage(g, this.remote.x, this.remote.y);
		}
		this.paint(shape);
		const hx = shape ? shape.hotX : 0;
		const hy = shape ? shape.hotY : 0;
		const x = at.x - hx * g.scale;
		const y = at.y - hy * g.scale;
		this.canvas.style.transform = `translate(${x}px, ${y}px) scale(${g.scale})`;
		this.canvas.hidden = false;
	}

	// paint draws the shape into the canvas once per change of shape.
	paint(shape) {
		const key = shape && shape.bitmap ? shape : 'arrow';
		if (this.drawn === key) {
			return;
		}
		this.drawn = key;
		const c = this.canvas;
		const ctx = c.getContext('2d');
		if (shape && shape.bitmap) {
			c.width = shape.w;
			c.height = shape.h;
			c.style.width = shape.w + 'px';
			c.style.height = shape.h + 'px';
			ctx.clearRect(0, 0, c.width, c.height);
			ctx.drawImage(shape.bitmap, 0, 0);
			return;
		}
		// No image (yet, or too large): an ordinary arrow.
		c.width = 12;
		c.height = 19;
		c.style.width = '12px';
		c.style.height = '19px';
		ctx.clearRect(0, 0, 12, 19);
		ctx.beginPath();
		ctx.moveTo(0.5, 0.5);
		ctx.lineTo(0.5, 16);
		ctx.lineTo(4.5, 12.5);
		ctx.lineTo(7.5, 18.5);
		ctx.lineTo(9.5, 17.5);
		ctx.lineTo(6.5, 11.5);
		ctx.lineTo(11.5, 11.5);
		ctx.closePath();
		ctx.fillStyle = '#fff';
		ctx.strokeStyle = '#000';
		ctx.fill();
		ctx.stroke();
	}
}
