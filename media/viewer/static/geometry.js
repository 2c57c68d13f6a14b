// Where the stream's frame is on the page. The video element covers the
// stage and letterboxes the frame (object-fit: contain), so the frame is
// the largest rectangle of the frame's aspect ratio centred in the
// element. One stream pixel covers `scale` CSS pixels.

export function frameRect(video) {
	const vw = video.videoWidth;
	const vh = video.videoHeight;
	if (!vw || !vh) {
		return null;
	}
	const r = video.getBoundingClientRect();
	const scale = Math.min(r.width / vw, r.height / vh);
	const width = vw * scale;
	const height = vh * scale;
	return {
		left: r.left + (r.width - width) / 2,
		top: r.top + (r.height - height) / 2,
		width, height, scale, vw, vh,
	};
}

// toStream maps a point of the page (client CSS pixels) to the stream
// pixel under it: the pixel whose area holds the point, the same rule as
// a screenshot's (the daemon clicks that pixel). Outside the frame it is
// clamped to the nearest edge pixel, and inside says so.
export function toStream(g, clientX, clientY) {
	const u = (clientX - g.left) / g.scale;
	const v = (clientY - g.top) / g.scale;
	const inside = u >= 0 && v >= 0 && u < g.vw && v < g.vh;
	return {
		x: Math.min(Math.max(Math.floor(u), 0), g.vw - 1),
		y: Math.min(Math.max(Math.floor(v), 0), g.vh - 1),
		inside,
	};
}

// toPage maps a stream point to the page (client CSS pixels).
export function toPage(g, x, y) {
	return { x: g.left + x * g.scale, y: g.top + y * g.scale };
}
