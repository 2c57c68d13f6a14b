// The viewer page: reads its link, connects, shows the stream, draws the
// Space's cursor and the others watching (their named pointers, and who
// is there) and, unless the ticket is view only, sends input.

import { readLink } from './link.js';
import { Session, mark } from './session.js';
import { Input } from './input.js';
import { CursorView } from './cursor.js';
import { Hud } from './hud.js';
import { Peers } from './peers.js';
import { Sound } from './sound.js';
import { frameRect, toStream } from './geometry.js';

function main() {
	mark('script');
	// A new link opened in this tab changes only the fragment, which
	// loads nothing: start again with it.
	window.addEventListener('hashchange', () => {
		if (new URLSearchParams(location.hash.slice(1)).has('ticket')) {
			location.reload();
		}
	});
	const $ = (id) => document.getElementById(id);
	const hud = new Hud(document);
	const stage = $('stage');
	const video = $('video');
	const field = $('keys');
	let storage = null;
	try {
		storage = window.sessionStorage;
	} catch {
		// storage off: a reload then needs the link again
	}
	const store = storage || { getItem: () => null, setItem: () => {} };

	if (typeof RTCPeerConnection !== 'function') {
		hud.fail('link', 'This browser cannot show the stream', 'It has no WebRTC. Open the link in a current Chrome, Firefox, Safari or Edge.');
		return;
	}
	const link = readLink(window.location, window.history, store);
	if (link.error) {
		hud.fail('link', 'This link cannot be opened', link.error);
		return;
	}
	const viewOnly = link.claims.viewOnly;
	if (viewOnly) {
		hud.viewOnly();
	}

	const cursor = new CursorView($('cursor'), video);
	const sound = new Sound({ doc: document, video, button: $('sound'), level: $('level') });
	let input = null;
	// The session is made below; the pointer's first move comes after.
	let session = null;
	const peers = new Peers({ stage, video, hud, send: (m) => session && session.send('control', m) });
	session = new Session({
		link, hud, storage: store,
		on: {
			track(stream) {
				if (video.srcObject !== stream) {
					video.srcObject = stream;
				}
				video.play().catch(() => {});
				if (stream.getAudioTracks().length > 0) {
					sound.onTrack(stream);
				}
				if ('requestVideoFrameCallback' in video) {
					video.requestVideoFrameCallback(() => mark('first-frame'));
				}
			},
			control(m) {
				if (m.type === 'cursor' && m.cursor) {
					cursor.onMessage(m.cursor);
				} else if (m.type === 'path' && m.path) {
					hud.path(m.path);
				} else if (m.type === 'who') {
					peers.onWho(m.viewers);
				} else if (m.type === 'peer') {
					peers.onPeer(m.peer);
				}
			},
			connected() {
				if (input) {
					input.reset();
				}
				peers.reset();
			},
			error(text) {
				hud.flash(text);
			},
		},
	});

	// The text field follows the pointer, so that an IME opens its window
	// where the person works.
	const placeField = (x, y) => {
		field.style.transform = `translate(${Math.round(x)}px, ${Math.round(y)}px)`;
	};
	if (viewOnly) {
		// Nothing goes to the Space; over the picture the local pointer
		// gives way to the Space's cursor all the same, so that one pointer
		// shows, where the Space has it.
		stage.addEventListener('pointermove', (e) => {
			const g = frameRect(video);
			stage.classList.toggle('over', !!g && toStream(g, e.clientX, e.clientY).inside);
		});
	} else {
		input = new Input({
			stage, video, field,
			send: (label, msg) => session.send(label, msg),
			backlog: (label) => session.backlog(label),
			onPointer: (x, y) => {
				cursor.onLocal(x, y);
				placeField(x, y);
			},
			notice: (text) => hud.flash(text),
		});
		input.attach();
	}
	stage.addEventListener('pointermove', (e) => {
		if (e.clientY < 64) {
			hud.wake();
		}
	});

	$('fullscreen').addEventListener('click', async () => {
		if (document.fullscreenElement) {
			await document.exitFullscreen().catch(() => {});
			return;
		}
		await document.documentElement.requestFullscreen().catch(() => {});
		// In full screen the Space gets Escape, Alt+Tab and the like too.
		if (navigator.keyboard && navigator.keyboard.lock) {
			navigator.keyboard.lock().catch(() => {});
		}
		field.focus({ preventScroll: true });
	});
	// The sound's button keeps no focus: the keys go on to the Space (on
	// the button, Space and Enter would mute it instead).
	$('sound').addEventListener('click', () => field.focus({ preventScroll: true }));
	video.addEventListener('resize', () => cursor.schedule());
	session.start();
}

main();
