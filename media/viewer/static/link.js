// The viewer's link: /viewer/#ticket=<ticket>&offer=<WHEP URL>. The
// fragment never reaches a server, and the page takes it out of the
// address bar at once; the ticket goes only in the Authorization header of
// the WHEP calls. A reload of the tab finds it again in sessionStorage
// (the tab's own, gone with it), together with the latest renewal.

const storageKey = 'cua-viewer-link';

// The WHEP routes a link may name (api.PathStreamScreen and
// api.PathStreamWindow), after the page's prefix: the page offers only to
// its own daemon's.
const offerPaths = /^\/v1\/stream\/(screen|windows\/[0-9]+)$/;

// The ICE servers' route (api.PathStreamICE), after the page's prefix.
const icePath = '/v1/stream/ice';

// A page served through cua-relay is at /c/<computer>/viewer/ (the
// relay's per-computer prefix, relayapi.PrefixComputer); one served by
// the daemon itself at /viewer/.
const relayPage = /^(\/c\/[^/]+)\/viewer\//;

// pagePrefix is what comes before the daemon's routes on this page's
// origin: "/c/<computer>" through the relay, else "".
export function pagePrefix(pathname) {
	const m = relayPage.exec(pathname);
	return m ? m[1] : '';
}

// offerPath checks a link's offer URL against the page's location and
// answers its path and query on the page's own origin, or null. Only the
// path counts (the page talks to the daemon that served it, whatever name
// it was reached by: the ticket goes nowhere else), and it must be a
// stream route under the page's own prefix: a link cannot make the page
// of one computer send its ticket to another's.
export function offerPath(offer, location) {
	const prefix = pagePrefix(location.pathname);
	let u;
	try {
		u = new URL(offer || prefix + '/v1/stream/screen', location.href);
	} catch {
		return null;
	}
	if (!u.pathname.startsWith(prefix + '/') || !offerPaths.test(u.pathname.slice(prefix.length))) {
		return null;
	}
	return u.pathname + u.search;
}

// readLink answers {ticket, offer, ice, claims} or {error}: offer and ice
// are paths on the page's own origin.
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
	const offer = offerPath(link.offer, location);
	if (!offer) {
		return { error: 'The link names no stream the viewer knows.' };
	}
	const claims = parseTicket(link.ticket);
	if (!claims) {
		return { error: 'The link\'s ticket is damaged. Ask for a new link.' };
	}
	link = { ticket: link.ticket, offer, ice: pagePrefix(location.pathname) + icePath, claims };
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
