// One viewer's connection to the Space, and its reconnection: a WHEP
// offer (RFC 9725) with the ticket as its bearer, the data channels of the
// stream (control always; input and pointer unless the ticket is view
// only), liveness by ping and pong, and a new session after a network
// drop or a restart of the daemon, for as long as a ticket it holds (the
// link's, or a renewal the daemon sent since) is valid. Each connection
// first asks the Space (through cua-relay: the relay) which ICE servers
// to use: a TURN server with a credential for this one view, when the
// Space is reached through the relay.

import { parseTicket, storeLink } from './link.js';
import { Sound } from './sound.js';

const offerTimeout = 10000; // ms for the daemon's answer to an offer
const iceTimeout = 5000; // ms for the answer of the ICE servers' route
// gatherTimeout bounds the wait for the viewer's candidates before an
// offer that has ICE servers: a TURN server that does not answer (a
// network that blocks its port) must not hold the offer for long. Once a
// relayed candidate came, the others get relayGrace more, no longer: it
// comes after the host and server-reflexive ones, and the Space's TURN
// permission for its address (the relay's) covers every relayed one. On
// loopback Chromium has its first relayed candidate 60-80 ms after the
// offer is made, all of them at 120-140 ms.
const gatherTimeout = 2000;
const relayGrace = 20;
const connectTimeout = 15000; // ms from the answer to a connected peer
const pingInterval = 1000;
// pongTimeout: a connected daemon that answers no ping for this long is
// gone (killed, or the network dropped): the page reconnects.
const pongTimeout = 4000;
// disconnectedGrace: ICE may say disconnected for a moment and recover.
const disconnectedGrace = 2000;
// Reconnection waits: full jitter, doubling from retryBase up to retryCap.
const retryBase = 500;
const retryCap = 5000;
const statsInterval = 1000;
// firstFrameGrace is how long after connecting a page with no picture
// yet asks for a keyframe: the daemon sends one the moment the peer
// connects, and a still screen sends no other frame that would make
// the browser notice it was lost.
const firstFrameGrace = 1500;

const newLink = 'A new link is needed: ask for one (cua-bridge view, or the stream_endpoint tool).';

export class Session {
	// link: {ticket, offer, claims}; on: {track(stream), control(msg),
	// connected(), error(msg)}.
	constructor({ link, hud, storage, on }) {
		this.offer = link.offer;
		this.ice = link.ice;
		this.tickets = [{ ticket: link.ticket, expires: link.claims.expires }];
		this.viewOnly = link.claims.viewOnly;
		this.hud = hud;
		this.storage = storage;
		this.on = on;
		this.failures = 0; // reconnections in a row that did not connect
		this.everConnected = false;
		this.skew = 0; // the daemon's clock minus ours, ms (from pongs)
		this.final = false;
		this.cur = null;
		window.addEventListener('pagehide', () => this.close());
	}

	start() {
		this.connect();
	}

	// serverNow is the daemon's clock, as well as the pongs tell it.
	serverNow() {
		return Date.now() + this.skew;
	}

	// bestTicket is the valid ticket that lives longest, or null.
	bestTicket() {
		const now = this.serverNow();
		const valid = this.tickets.filter((t) => t.expires > now);
		valid.sort((a, b) => b.expires - a.expires);
		return valid[0] || null;
	}

	async connect() {
		const ticket = this.bestTicket();
		if (!ticket) {
			this.expired();
			return;
		}
		this.hud.state(this.everConnected ? 'reconnecting' : 'connecting',
			this.everConnected ? `Reconnecting… (attempt ${this.failures + 1})` : 'Connecting…');
		this.hud.path(null);
		// A callback of an ended connection finds this.cur changed (live).
		const c = { pc: null, ticket: ticket.ticket, channels: {}, timers: [], location: null, lastPong: 0, connected: false, connectedAt: 0, keyAsked: false };
		this.cur = c;
		const live = () => this.cur === c && !this.final;

		// The ICE servers come first: the peer connection is made with
		// them (they are this view's, and may change between connections).
		let iceServers;
		mark('ice-asked');
		try {
			const res = await fetch(this.ice, {
				headers: { 'Authorization': 'Bearer ' + c.ticket },
				cache: 'no-store',
				credentials: 'omit',
				signal: AbortSignal.timeout(iceTimeout),
			});
			if (!live()) {
				return;
			}
			if (res.status === 404 || res.status === 405 || res.status === 401) {
				// A daemon from before the route (direct only): through the
				// relay it answers 404, on its own port 401 (it names no
				// route to a ticket). The offer, next, judges the ticket.
				iceServers = [];
			} else if (res.status !== 200) {
				const body = await res.json().catch(() => null);
				this.end(c);
				this.refused(res.status, (body && body.error) || {}, c.ticket);
				return;
			} else {
				iceServers = readICEServers(await res.json());
			}
			mark('ice-answered');
			c.pc = new RTCPeerConnection({ iceServers, bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
		} catch (err) {
			if (live()) {
				this.end(c);
				this.retry(`could not get the Space's ICE servers (${err.message || err})`);
			}
			return;
		}
		const pc = c.pc;

		const tr = pc.addTransceiver('video', { direction: 'recvonly' });
		// Render each frame as it arrives: a remote desktop wants the
		// latest picture, not a smooth one (the daemon also sends the
		// zero playout delay).
		if ('jitterBufferTarget' in tr.receiver) {
			tr.receiver.jitterBufferTarget = 0;
		}
		if (Sound.wanted(this.offer)) {
			pc.addTransceiver('audio', { direction: 'recvonly' });
		}
		c.channels.control = pc.createDataChannel('control');
		if (!this.viewOnly) {
			c.channels.input = pc.createDataChannel('input');
			c.channels.pointer = pc.createDataChannel('pointer', { ordered: false, maxRetransmits: 0 });
			c.channels.input.onmessage = (e) => live() && this.onInputAnswer(e.data);
		}
		pc.ontrack = (e) => {
			if (live()) {
				this.on.track(e.streams[0] || new MediaStream([e.track]));
			}
		};
		pc.onconnectionstatechange = () => live() && this.onPeerState(c);
		const ctl = c.channels.control;
		ctl.onopen = () => live() && this.onControlOpen(c);
		ctl.onmessage = (e) => live() && this.onControl(c, e.data);
		ctl.onclose = () => live() && this.drop('the Space closed the connection');

		let answer;
		try {
			await pc.setLocalDescription(await pc.createOffer());
			// Without ICE servers the offer goes at once: Chromium's on
			// loopback carries no candidate at all, and the daemon's answer
			// carries all of its own, which is enough (it learns the
			// viewer's address from its checks). With a TURN server the
			// offer waits for the viewer's candidates: the Space takes no
			// trickle, and its TURN allocation lets in only the addresses
			// it was told of, so a Space reached only through TURN would
			// never hear the viewer's checks.
			if (iceServers.length > 0) {
				await gathered(pc, gatherTimeout);
				if (!live()) {
					return;
				}
			}
			mark('offer-sent');
			const res = await fetch(this.offer, {
				method: 'POST',
				headers: { 'Content-Type': 'application/sdp', 'Authorization': 'Bearer ' + c.ticket },
				body: pc.localDescription.sdp,
				cache: 'no-store',
				credentials: 'omit',
				signal: AbortSignal.timeout(offerTimeout),
			});
			if (!live()) {
				return;
			}
			if (res.status !== 201) {
				const body = await res.json().catch(() => null);
				this.end(c);
				this.refused(res.status, (body && body.error) || {}, c.ticket);
				return;
			}
			c.location = res.headers.get('Location');
			answer = await res.text();
			mark('answered');
			await pc.setRemoteDescription({ type: 'answer', sdp: answer });
		} catch (err) {
			if (live()) {
				this.end(c);
				this.retry(`the Space did not answer (${err.message || err})`);
			}
			return;
		}
		c.timers.push(setTimeout(() => live() && !c.connected && this.drop('the connection did not come up'), connectTimeout));
	}

	onPeerState(c) {
		const s = c.pc.connectionState;
		if (s === 'connected') {
			clearTimeout(c.disconnected);
			if (!c.connected) {
				mark('connected');
				c.connected = true;
				c.connectedAt = performance.now();
				this.everConnected = true;
				this.failures = 0;
				this.hud.state('connected', 'Live');
				this.on.connected();
				this.startStats(c);
			}
		} else if (s === 'failed' || s === 'closed') {
			this.drop(`the connection ${s}`);
		} else if (s === 'disconnected') {
			clearTimeout(c.disconnected);
			c.disconnected = setTimeout(() => this.cur === c && this.drop('the connection was lost'), disconnectedGrace);
		}
	}

	onControlOpen(c) {
		c.lastPong = performance.now();
		let pingID = 0;
		let lastTick = performance.now();
		c.timers.push(setInterval(() => {
			if (this.cur !== c) {
				return;
			}
			const now = performance.now();
			if (now - lastTick > 2 * pingInterval) {
				// This timer ran late (a hidden tab's timers are slowed):
				// the pings were not sent, so no answer was missed.
				c.lastPong = now;
			}
			lastTick = now;
			if (c.connected && now - c.lastPong > pongTimeout) {
				this.drop(`no answer from the Space for ${pongTimeout / 1000} s`);
				return;
			}
			this.sendOn(c, 'control', { type: 'ping', id: ++pingID, t: performance.now() });
		}, pingInterval));
		this.sendOn(c, 'control', { type: 'ping', id: ++pingID, t: performance.now() });
	}

	onControl(c, data) {
		let m;
		try {
			m = JSON.parse(data);
		} catch {
			return;
		}
		switch (m.type) {
		case 'pong': {
			const now = performance.now();
			c.lastPong = now;
			c.rtt = now - m.t;
			if (m.server_ms) {
				this.skew = m.server_ms - (Date.now() - c.rtt / 2);
			}
			break;
		}
		case 'ticket': {
			const claims = parseTicket(m.ticket || '');
			if (claims) {
				this.tickets.push({ ticket: m.ticket, expires: claims.expires });
				const now = this.serverNow();
				this.tickets = this.tickets.filter((t) => t.expires > now);
				const best = this.bestTicket();
				if (best) {
					storeLink(this.storage, { ticket: best.ticket, offer: this.offer });
				}
			}
			break;
		}
		case 'error':
			this.on.error((m.error && m.error.message) || 'the Space refused a message');
			break;
		default:
			this.on.control(m);
		}
	}

	onInputAnswer(data) {
		try {
			const m = JSON.parse(data);
			if (m.type === 'error') {
				this.on.error((m.error && m.error.message) || 'the Space refused an input');
			}
		} catch {
			// not ours to read
		}
	}

	startStats(c) {
		let prev = null;
		c.timers.push(setInterval(async () => {
			if (this.cur !== c) {
				return;
			}
			const stats = await c.pc.getStats().catch(() => null);
			if (!stats || this.cur !== c) {
				return;
			}
			let video = null;
			stats.forEach((s) => {
				if (s.type === 'inbound-rtp' && s.kind === 'video') {
					video = s;
				}
			});
			if (!c.keyAsked && wantsKeyframe(video ? video.framesDecoded : 0, c.connectedAt, performance.now())) {
				c.keyAsked = true;
				this.sendOn(c, 'control', { type: 'keyframe' });
			}
			if (!video) {
				return;
			}
			const out = { width: video.frameWidth, height: video.frameHeight, rtt: c.rtt };
			if (prev) {
				const secs = (video.timestamp - prev.timestamp) / 1000;
				if (secs > 0) {
					out.fps = (video.framesDecoded - prev.framesDecoded) / secs;
					out.kbps = (video.bytesReceived - prev.bytesReceived) * 8 / secs / 1000;
				}
			}
			prev = video;
			this.hud.stats(out);
		}, statsInterval));
	}

	// send sends an input message ('input' or 'pointer'); nothing is sent
	// while no session is open (what is held was let go by the daemon).
	send(label, msg) {
		if (this.cur && !this.final) {
			this.sendOn(this.cur, label, msg);
		}
	}

	sendOn(c, label, msg) {
		const ch = c.channels[label];
		if (ch && ch.readyState === 'open') {
			ch.send(JSON.stringify(msg));
		}
	}

	// backlog is how much a channel holds unsent.
	backlog(label) {
		const ch = this.cur && this.cur.channels[label];
		return ch ? ch.bufferedAmount : 0;
	}

	// drop ends the current session and tries again.
	drop(reason) {
		if (this.final || !this.cur) {
			return;
		}
		this.end(this.cur);
		this.retry(reason);
	}

	// end closes a connection for good; its callbacks are ignored after.
	end(c) {
		if (this.cur === c) {
			this.cur = null;
		}
		c.timers.forEach((t) => { clearTimeout(t); clearInterval(t); });
		clearTimeout(c.disconnected);
		if (c.pc) {
			c.pc.close();
		}
		if (c.location) {
			// The daemon may still hold the session (a network drop): let it
			// go. After a restart it answers 404, which is fine.
			fetch(c.location, { method: 'DELETE', headers: { Authorization: 'Bearer ' + c.ticket }, keepalive: true, credentials: 'omit' })
				.catch(() => {});
		}
	}

	retry(reason) {
		if (this.final) {
			return;
		}
		if (!this.bestTicket()) {
			this.expired();
			return;
		}
		this.failures++;
		const wait = Math.random() * Math.min(retryCap, retryBase * 2 ** (this.failures - 1));
		this.hud.state(this.everConnected ? 'reconnecting' : 'connecting',
			`${this.everConnected ? 'Reconnecting' : 'Connecting'}: ${reason}; trying again…`);
		setTimeout(() => !this.final && this.connect(), wait);
	}

	// refused handles an offer the daemon answered with an error.
	refused(status, err, ticket) {
		const msg = err.message || `HTTP ${status}`;
		if (status === 429 || status >= 500) {
			this.retry(msg); // too many viewers now, or a passing failure
			return;
		}
		if (status === 401) {
			const t = parseTicket(ticket) || {};
			if (/expired/.test(msg) || (t.expires && t.expires <= this.serverNow())) {
				this.expired();
			} else {
				this.finish('invalid', 'This link is no longer valid', `${msg}.\n${newLink}`);
			}
			return;
		}
		if (status === 404) {
			this.finish('gone', 'The stream is gone', `${msg}.\n${newLink}`);
		} else if (status === 501) {
			this.finish('unsupported', 'This Space cannot stream', `${msg}.`);
		} else {
			this.finish('refused', 'The Space refused this viewer', `${msg}.\n${newLink}`);
		}
	}

	expired() {
		if (this.everConnected) {
			this.finish('expired', 'The connection was lost, and this link has expired', newLink);
		} else {
			this.finish('expired', 'This link has expired', `Links to a Space are short-lived. ${newLink}`);
		}
	}

	finish(reason, title, text) {
		this.final = true;
		if (this.cur) {
			this.end(this.cur);
		}
		this.hud.fail(reason, title, text);
	}

	// close ends the session as the page goes.
	close() {
		if (this.cur) {
			this.end(this.cur);
		}
	}
}

// readICEServers checks the answer of the ICE servers' route (api.StreamICE)
// and keeps of each server what RTCPeerConnection takes: an answer of
// another shape is an error (the connection is tried again).
export function readICEServers(body) {
	const list = body && body.ice_servers;
	if (list === null || list === undefined) {
		return [];
	}
	if (!Array.isArray(list)) {
		throw new Error('the ICE servers answer is not a list');
	}
	return list.map((s) => {
		const urls = typeof (s && s.urls) === 'string' ? [s.urls] : s && s.urls;
		if (!Array.isArray(urls) || urls.length === 0 || !urls.every((u) => typeof u === 'string' && /^(stun|stuns|turn|turns):/.test(u))) {
			throw new Error('an ICE server without STUN or TURN URLs');
		}
		const out = { urls };
		if (typeof s.username === 'string') {
			out.username = s.username;
		}
		if (typeof s.credential === 'string') {
			out.credential = s.credential;
		}
		return out;
	});
}

// wantsKeyframe says a page that connected at connectedAt (0: not yet)
// and has decoded that many frames by now should ask for a keyframe.
export function wantsKeyframe(decoded, connectedAt, now) {
	return !decoded && connectedAt > 0 && now - connectedAt >= firstFrameGrace;
}

// mark names a step of the page's way to the first frame, once, for a
// benchmark or a person looking at the Performance panel ("cua:" marks).
export function mark(step) {
	if (performance.getEntriesByName('cua:' + step, 'mark').length === 0) {
		performance.mark('cua:' + step);
	}
}

// gathered resolves once pc has gathered its candidates, relayGrace after
// its first relayed one, or after ms.
export function gathered(pc, ms) {
	return new Promise((resolve) => {
		if (pc.iceGatheringState === 'complete') {
			resolve();
			return;
		}
		let timer = 0;
		let grace = 0;
		const done = () => {
			clearTimeout(timer);
			clearTimeout(grace);
			pc.removeEventListener('icegatheringstatechange', onState);
			pc.removeEventListener('icecandidate', onCandidate);
			resolve();
		};
		const onState = () => pc.iceGatheringState === 'complete' && done();
		const onCandidate = (e) => {
			if (!grace && e.candidate && e.candidate.type === 'relay') {
				grace = setTimeout(done, relayGrace);
			}
		};
		timer = setTimeout(done, ms);
		pc.addEventListener('icegatheringstatechange', onState);
		pc.addEventListener('icecandidate', onCandidate);
	});
}
