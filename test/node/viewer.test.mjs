// The viewer page's own modules (media/viewer/static), as units: which
// offer a link may name, on a page served by the daemon (/viewer/) and on
// one served through cua-relay (/c/<computer>/viewer/), and which ICE
// servers the page takes from the Space, and what its overlay says of the
// way the media took. test/browser runs the whole page
// in Chromium against real daemons.

import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The page's modules, copied beside a package.json that says they are ES
// modules: the page's directory holds none (it is embedded as it is), and
// a Node before 20.19 would read them as CommonJS.
const staticDir = fileURLToPath(new URL('../../media/viewer/static/', import.meta.url));
const modules = mkdtempSync(path.join(os.tmpdir(), 'cua-viewer-'));
after(() => rmSync(modules, { recursive: true, force: true }));
for (const f of readdirSync(staticDir).filter((f) => f.endsWith('.js'))) {
  copyFileSync(path.join(staticDir, f), path.join(modules, f));
}
writeFileSync(path.join(modules, 'package.json'), '{"type": "module"}\n');
const load = (name) => import(pathToFileURL(path.join(modules, name)).href);
const { offerPath, pagePrefix, readLink } = await load('link.js');
const { gathered, readICEServers, wantsKeyframe } = await load('session.js');
const { Hud } = await load('hud.js');
const { Sound } = await load('sound.js');

const b64url = (s) => Buffer.from(s).toString('base64url');
// A ticket as the daemon spells it; the page reads its claims, never its
// signature (the Space checks that).
const ticket = (claims) => `cuat1.${b64url(JSON.stringify(claims))}.c2lnbmF0dXJl`;
const live = ticket({ t: 'screen', e: Math.floor(Date.now() / 1000) + 60 });

function page(href) {
  const u = new URL(href);
  return { href: u.href, pathname: u.pathname, search: u.search, hash: u.hash };
}

function memoryStorage() {
  const m = new Map();
  return { getItem: (k) => (m.has(k) ? m.get(k) : null), setItem: (k, v) => m.set(k, String(v)) };
}

describe('viewer link', () => {
  it('knows its prefix', () => {
    for (const [path, want] of [
      ['/viewer/', ''],
      ['/viewer/index.html', ''],
      ['/c/box/viewer/', '/c/box'],
      ['/c/box/viewer/index.html', '/c/box'],
      ['/c/box-2/viewer/', '/c/box-2'],
      ['/c//viewer/', ''],
      ['/x/c/box/viewer/', ''],
      ['/c/box/other/viewer/', ''],
    ]) {
      assert.equal(pagePrefix(path), want, path);
    }
  });

  // Each offer a link names, on each page: the path the page posts to
  // (on its own origin), or null for a link it refuses.
  const cases = [
    // The daemon's own page: its routes, on any name of its origin.
    ['http://127.0.0.1:3211/viewer/', 'http://127.0.0.1:3211/v1/stream/screen', '/v1/stream/screen'],
    ['http://127.0.0.1:3211/viewer/', 'http://127.0.0.1:3211/v1/stream/windows/42?max_fps=60', '/v1/stream/windows/42?max_fps=60'],
    ['http://127.0.0.1:3211/viewer/', '/v1/stream/screen?ice=relay', '/v1/stream/screen?ice=relay'],
    ['http://127.0.0.1:3211/viewer/', '', '/v1/stream/screen'],
    ['http://127.0.0.1:3211/viewer/', 'http://elsewhere.example/v1/stream/screen', '/v1/stream/screen'],
    ['http://127.0.0.1:3211/viewer/', '/v1/stream/tickets', null],
    ['http://127.0.0.1:3211/viewer/', '/v1/stream/windows/x', null],
    ['http://127.0.0.1:3211/viewer/', '/v1/stream/screen/../tickets', null],
    ['http://127.0.0.1:3211/viewer/', '/v1/exec', null],
    // The daemon's page refuses a relay computer's routes.
    ['http://127.0.0.1:3211/viewer/', '/c/box/v1/stream/screen', null],
    // Through the relay: the same computer's routes only.
    ['https://relay.example/c/box/viewer/', 'https://relay.example/c/box/v1/stream/screen', '/c/box/v1/stream/screen'],
    ['https://relay.example/c/box/viewer/index.html', 'https://relay.example/c/box/v1/stream/windows/7?max_width=640', '/c/box/v1/stream/windows/7?max_width=640'],
    ['https://relay.example/c/box/viewer/', '', '/c/box/v1/stream/screen'],
    ['https://relay.example/c/box/viewer/', 'https://relay.example/c/other/v1/stream/screen', null],
    ['https://relay.example/c/box/viewer/', 'https://relay.example/c/boxer/v1/stream/screen', null],
    // A name as long as the page's: only the prefix check refuses it.
    ['https://relay.example/c/box/viewer/', 'https://relay.example/c/bob/v1/stream/screen', null],
    ['https://relay.example/c/box/viewer/', 'https://relay.example/c/bo/v1/stream/screen', null],
    ['https://relay.example/c/box/viewer/', 'https://relay.example/v1/stream/screen', null],
    ['https://relay.example/c/box/viewer/', '/c/box/../other/v1/stream/screen', null],
    ['https://relay.example/c/box/viewer/', '/c/box/v1/stream/tickets', null],
    ['https://relay.example/c/box/viewer/', '/c/box/c/other/v1/stream/screen', null],
    // Another origin names only a path: the ticket still goes to this one.
    ['https://relay.example/c/box/viewer/', 'https://evil.example/c/box/v1/stream/screen', '/c/box/v1/stream/screen'],
    ['https://relay.example/c/box/viewer/', 'https://evil.example/c/evil/v1/stream/screen', null],
    ['https://relay.example/c/box/viewer/', 'http://[::1', null],
  ];
  for (const [href, offer, want] of cases) {
    it(`on ${href} takes ${offer || '(no offer)'}: ${want}`, () => {
      assert.equal(offerPath(offer, page(href)), want);
    });
  }

  it('reads a relay link and keeps it for a reload', () => {
    const storage = memoryStorage();
    let replaced = null;
    const history = { replaceState: (_s, _t, url) => { replaced = url; } };
    const frag = new URLSearchParams({ ticket: live, offer: 'https://relay.example/c/box/v1/stream/screen' }).toString();
    const loc = page(`https://relay.example/c/box/viewer/#${frag}`);
    const link = readLink(loc, history, storage);
    assert.equal(link.error, undefined, link.error);
    assert.equal(link.offer, '/c/box/v1/stream/screen');
    assert.equal(link.ice, '/c/box/v1/stream/ice');
    assert.equal(link.ticket, live);
    assert.equal(link.claims.target, 'screen');
    assert.equal(replaced, '/c/box/viewer/', 'the fragment stays in the address bar');
    // A reload finds it in the tab's storage, checked again.
    const again = readLink(page('https://relay.example/c/box/viewer/'), history, storage);
    assert.deepEqual([again.offer, again.ice, again.ticket], [link.offer, link.ice, link.ticket]);
    // The same storage read by another computer's page is refused.
    assert.match(readLink(page('https://relay.example/c/other/viewer/'), history, storage).error, /no stream/);
  });

  it('refuses a link to another computer', () => {
    const frag = new URLSearchParams({ ticket: live, offer: 'https://relay.example/c/other/v1/stream/screen' }).toString();
    const link = readLink(page(`https://relay.example/c/box/viewer/#${frag}`), { replaceState() {} }, memoryStorage());
    assert.match(link.error, /no stream the viewer knows/);
  });

  it('asks the daemon itself for ICE servers on its own page', () => {
    const frag = new URLSearchParams({ ticket: live, offer: 'http://127.0.0.1:3211/v1/stream/screen' }).toString();
    const link = readLink(page(`http://127.0.0.1:3211/viewer/#${frag}`), { replaceState() {} }, memoryStorage());
    assert.equal(link.ice, '/v1/stream/ice');
  });
});

describe('viewer ICE servers', () => {
  const turn = { urls: ['turn:127.0.0.1:3478?transport=udp', 'turns:relay.example:5349?transport=tcp'], username: '1700000000:box:v1', credential: 'c2VjcmV0' };
  for (const [name, body, want] of [
    ['none', { ice_servers: [] }, []],
    ['null list (an empty Go slice)', { ice_servers: null }, []],
    ['a TURN server', { ice_servers: [turn] }, [turn]],
    ['one URL as a string', { ice_servers: [{ urls: 'stun:127.0.0.1:3478' }] }, [{ urls: ['stun:127.0.0.1:3478'] }]],
    ['fields RTCIceServer does not take are dropped', { ice_servers: [{ ...turn, extra: 1 }] }, [turn]],
  ]) {
    it(`takes ${name}`, () => assert.deepEqual(readICEServers(body), want));
  }
  for (const [name, body] of [
    ['a list that is not one', { ice_servers: {} }],
    ['a server without URLs', { ice_servers: [{ username: 'u' }] }],
    ['an empty URL list', { ice_servers: [{ urls: [] }] }],
    ['a URL of another scheme', { ice_servers: [{ urls: ['https://relay.example/'] }] }],
    ['a server that is not an object', { ice_servers: [null] }],
  ]) {
    it(`refuses ${name}`, () => assert.throws(() => readICEServers(body)));
  }
});

// A document with what the overlay touches: elements by id, the body's
// data attributes.
function fakeDocument() {
  const els = new Map();
  const el = () => ({
    textContent: '', hidden: true, dataset: {}, children: [], classList: { add() {}, remove() {} },
    replaceChildren(...c) { this.children = c; },
  });
  return {
    body: { dataset: {} },
    createElement: el,
    getElementById: (id) => {
      if (!els.has(id)) els.set(id, el());
      return els.get(id);
    },
  };
}

describe('viewer who is here', () => {
  it('lists everyone by name and role, itself marked, names as text', () => {
    const doc = fakeDocument();
    const hud = new Hud(doc);
    hud.who([
      { name: 'alice', role: 'owner' },
      { name: '<img src=x onerror=alert(1)>', role: 'viewer', viewOnly: true },
      { name: 'owner', role: '', viewOnly: true, you: true },
    ]);
    const list = doc.getElementById('who');
    assert.equal(list.hidden, false);
    assert.deepEqual(list.children.map((li) => li.textContent),
      ['alice · owner', '<img src=x onerror=alert(1)> · viewer', 'owner · view only (you)']);
    assert.deepEqual(list.children.map((li) => li.dataset.you), [undefined, undefined, 'true']);
  });

  it('hides the list while the page watches alone', () => {
    const doc = fakeDocument();
    const hud = new Hud(doc);
    hud.who([{ name: 'owner', you: true }]);
    assert.equal(doc.getElementById('who').hidden, true);
  });
});

describe('viewer overlay path', () => {
  for (const [name, path, want, media] of [
    ['direct', { media: 'direct', local: 'host', remote: 'host', protocol: 'udp' }, 'Live · direct', 'direct'],
    ['TURN over UDP', { media: 'turn', local: 'relay', remote: 'host', protocol: 'udp' }, 'Live · via TURN relay (udp)', 'turn'],
    ['TURN over TCP', { media: 'turn', local: 'host', remote: 'relay', protocol: 'tcp' }, 'Live · via TURN relay (tcp)', 'turn'],
    ['TURN, protocol unreadable', { media: 'turn', protocol: '<b>x</b>' }, 'Live · via TURN relay', 'turn'],
  ]) {
    it(`shows ${name}`, () => {
      const doc = fakeDocument();
      const hud = new Hud(doc);
      hud.state('connected', 'Live');
      hud.path(path);
      assert.equal(doc.getElementById('state').textContent, want);
      assert.equal(doc.body.dataset.path, media);
    });
  }

  it('keeps the path for a connection that comes up after it', () => {
    const doc = fakeDocument();
    const hud = new Hud(doc);
    hud.state('connecting', 'Connecting…');
    hud.path({ media: 'direct', protocol: 'udp' });
    assert.equal(doc.getElementById('state').textContent, 'Connecting…');
    hud.state('connected', 'Live');
    assert.equal(doc.getElementById('state').textContent, 'Live · direct');
  });

  it('forgets it as a new connection starts', () => {
    const doc = fakeDocument();
    const hud = new Hud(doc);
    hud.state('connected', 'Live');
    hud.path({ media: 'turn', protocol: 'udp' });
    hud.state('reconnecting', 'Reconnecting… (attempt 1)');
    hud.path(null);
    assert.equal(doc.body.dataset.path, undefined);
    hud.state('connected', 'Live');
    assert.equal(doc.getElementById('state').textContent, 'Live');
  });
});

// A peer connection as far as the offer's wait for candidates sees it.
class FakePeer extends EventTarget {
  iceGatheringState = 'gathering';
  candidate(type) {
    const e = new Event('icecandidate');
    e.candidate = type ? { type } : null;
    this.dispatchEvent(e);
  }
  complete() {
    this.iceGatheringState = 'complete';
    this.dispatchEvent(new Event('icegatheringstatechange'));
  }
}

describe('viewer offer waits for its candidates', () => {
  const timed = async (pc, ms, act) => {
    const t0 = performance.now();
    const p = gathered(pc, ms);
    act(pc);
    await p;
    return performance.now() - t0;
  };
  it('until gathering completes', async () => {
    assert.ok(await timed(new FakePeer(), 5000, (pc) => setTimeout(() => pc.complete(), 30)) < 1000);
  });
  it('not at all when it is complete', async () => {
    const pc = new FakePeer();
    pc.iceGatheringState = 'complete';
    assert.ok(await timed(pc, 5000, () => {}) < 50);
  });
  it('a moment past the first relayed candidate', async () => {
    const took = await timed(new FakePeer(), 5000, (pc) => { pc.candidate('host'); pc.candidate('srflx'); setTimeout(() => pc.candidate('relay'), 30); });
    assert.ok(took >= 30 && took < 1000, `took ${took} ms`);
  });
  it('not for host candidates alone', async () => {
    const took = await timed(new FakePeer(), 300, (pc) => { pc.candidate('host'); pc.candidate(null); });
    assert.ok(took >= 290, `took ${took} ms: the wait ended without a relayed candidate`);
  });
});

describe('viewer asks for a lost first keyframe', () => {
  it('asks once connected a while with no frame decoded', () => {
    assert.equal(wantsKeyframe(0, 1000, 2600), true);
  });
  it('waits the grace after connecting', () => {
    assert.equal(wantsKeyframe(0, 1000, 1900), false);
  });
  it('never before connecting', () => {
    assert.equal(wantsKeyframe(0, 0, 100000), false);
  });
  it('not once a frame was decoded', () => {
    assert.equal(wantsKeyframe(1, 1000, 100000), false);
  });
});

describe('the sound', () => {
  it('is asked for only when the offer URL says audio=1', () => {
    assert.equal(Sound.wanted('https://box.example/v1/stream/screen?audio=1'), true);
    assert.equal(Sound.wanted('https://relay.example/c/box/v1/stream/windows/7?max_fps=20&audio=1'), true);
    assert.equal(Sound.wanted('https://box.example/v1/stream/screen?audio=0'), false);
    assert.equal(Sound.wanted('https://box.example/v1/stream/screen?max_fps=30'), false);
    assert.equal(Sound.wanted('https://box.example/v1/stream/screen#audio=1'), false);
    assert.equal(Sound.wanted('not a url'), false);
  });
});
