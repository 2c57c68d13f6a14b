// The viewer's link: /viewer/#ticket=<ticket>&offer=<WHEP URL>. The
// fragment never reaches a server, and the page takes it out of the
// address bar at once; the ticket goes only in the Authorization header of
// the WHEP calls. A reload of the tab finds it again in sessionStorage
// (the tab's own, gone with it), together with the latest renewal.

const storageKey = 'cua-viewer-link';

// The WHEP routes a link may name (api.PathStreamScreen and
// api.PathStreamWindow): the page offers only to its own daemon's.
const offerPaths = /^\/v1\/stream\/(screen|windows\/[0-9]+)$/;

// readLink answers {ticket, offer} or {error}.
export function readLink(location, history, storage) {
	const params = new URLSearchParams(location.hash.replace(/^#/, ''));
	let link = null;
	if (params.has('ticket') || params.has('offer')) {
		link = { ticket: params.get('ticket') || '', offer: params.get('offer') || '' };
		// Out of the address bar (and of what a person copies from it).
		history.replaceState(null, '', location.pathname + location.search);
	} else {
		try {
			link = JSON.parse(storage.getItem(storageKey) || 'null');
		} catch {
			link = null;
		}
	}
	if (!link || !link.ticket) {
		return { error: 'The link has no ticket. Open the link that cua-bridge view printed, whole.' };
	}
	let offer;
	try {
		offer = new URL(link.offer || '/v1/stream/screen', location.href);
	} catch {
		return { error: 'The link names no stream the viewer knows.' };
	}
	// Only the path and query count: the page talks to the daemon that
	// served it, whatever name it was reached by.
	if (!offerPaths.test(offer.pathname)) {
		return { error: 'The link names no stream the viewer knows.' };
	}
	const claims = parseTicket(link.ticket);
	if (!claims) {
		return { error: 'The link\'s ticket is damaged. Ask for a new link.' };
	}
	link = { ticket: link.ticket, offer: offer.pathname + offer.search, claims };
	storeLink(storage, link);
	return link;
}

// storeLink keeps the link (with its latest ticket) for a reload.
export function storeLink(storage, link) {
	try {
		storage.setItem(storageKey, JSON.stringify({ ticket: link.ticket, offer: link.offer }));
	} catch {
		// Storage may be off; a reload then needs the link again.
	}
}

// parseTicket reads a ticket's claims: "cuat1." + base64url(JSON) + "." +
// signature. The page believes them only to explain itself (view only,
// when the link expires); the daemon checks the signature.
export function parseTicket(ticket) {
	const m = /^cuat1\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/.exec(ticket);
	if (!m) {
		return null;
	}
	try {
		const b64 = m[1].replace(/-/g, '+').replace(/_/g, '/');
		const json = JSON.parse(atob(b64 + '='.repeat((4 - b64.length % 4) % 4)));
		if (typeof json.e !== 'number' || typeof json.t !== 'string') {
			return null;
		}
		return { target: json.t, viewOnly: json.v === true, expires: json.e * 1000 };
	} catch {
		return null;
	}
}
