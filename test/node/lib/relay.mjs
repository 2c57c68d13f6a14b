// A STAND-IN for cua-relay, for the Node tests of the bridge's relay tools
// only (the real relay is another program, which the end-to-end suite
// runs). Plain HTTP on 127.0.0.1 (the bridge takes http:// for a loopback
// relay; the Go tests hold the TLS): the user API (/v1/me, /v1/computers),
// /c/<computer>/... proxied to the attached daemon with its token, and a
// front for a daemon that lacks relay_attach, serving /v1/relay and
// attaching the computer whose token it is handed. Its shares routes keep
// shares in memory; relay.team names alice's team (null: none, and a
// share is refused with the seed's sharing_needs_team), and only
// relay.teammates are in it.

import http from 'node:http';
import { randomBytes } from 'node:crypto';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function encode62(n, width) {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = base62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(s) {
  let c = 0xffffffff;
  for (const b of Buffer.from(s)) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** token makes a relay token of kind (cuau, cuac) as relay/protocol does: 256 random bits in base62 and a CRC-32. */
export function token(kind) {
  const head = `${kind}_${encode62(BigInt('0x' + randomBytes(32).toString('hex')), 43)}`;
  return head + encode62(BigInt(crc32(head)), 6);
}

const json = (res, status, v) => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(v));
};
const fail = (res, status, kind, message) => json(res, status, { error: { kind, message, retryable: kind === 'relay' } });

async function body(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString();
}

/** proxy forwards req to target (a daemon's http URL) at path, with the daemon's token. */
function proxy(req, res, target, path, daemonToken, rewrite) {
  const u = new URL(path, target);
  const headers = { ...req.headers, host: u.host, authorization: `Bearer ${daemonToken}` };
  delete headers['accept-encoding'];
  const out = http.request(u, { method: req.method, headers }, (up) => {
    if (!rewrite) {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
      return;
    }
    const chunks = [];
    up.on('data', (c) => chunks.push(c));
    up.on('end', () => json(res, up.statusCode, rewrite(JSON.parse(Buffer.concat(chunks).toString()))));
  });
  out.on('error', () => fail(res, 502, 'relay', 'the computer did not answer'));
  req.pipe(out);
}

/** startRelay serves the stand-in relay with one user; procs closes it. */
export async function startRelay(procs) {
  const userToken = token('cuau');
  const computers = new Map(); // name -> { token, online, target, daemonToken }
  const relay = { userToken, computers, puts: 0, team: null, teammates: [] };
  const s = http.createServer(async (req, res) => {
    if (req.headers.authorization !== `Bearer ${userToken}`) return fail(res, 401, 'unauthenticated', 'relay: wrong user token');
    const p = new URL(req.url, 'http://x').pathname;
    const view = (name, c) => ({ name, owner: 'alice', created_ms: 1, online: c.online, daemon_version: c.online ? 'test' : undefined });
    if (p === '/v1/me') return json(res, 200, { user: { id: 'u-alice', name: 'alice', created_ms: 1 } });
    if (p === '/v1/computers' && req.method === 'GET') return json(res, 200, { computers: [...computers].map(([n, c]) => view(n, c)) });
    if (p === '/v1/computers' && req.method === 'POST') {
      const { name } = JSON.parse(await body(req));
      const t = token('cuac');
      computers.set(name, { token: t, online: false });
      return json(res, 200, { computer: view(name, computers.get(name)), token: t, urls: [`ws://${req.headers.host}/v1/attach`] });
    }
    let m = /^\/v1\/computers\/([^/]+)\/shares$/.exec(p);
    if (m) {
      const name = decodeURIComponent(m[1]);
      const c = computers.get(name);
      if (!c) return fail(res, 404, 'not_found', `relay: no computer ${name}`);
      c.shares ??= [];
      const q = new URL(req.url, 'http://x').searchParams;
      if (req.method === 'PUT') {
        const { who, role = 'viewer' } = JSON.parse(await body(req));
        if (!relay.team) return json(res, 403, { error: { kind: 'permission_denied', reason: 'sharing_needs_team', message: 'Sharing is for teams. Start a team to share this Space.' } });
        if (who !== `team:${relay.team}` && !relay.teammates.includes(who)) {
          return json(res, 403, { error: { kind: 'permission_denied', reason: 'share_outside_team', message: `relay: ${who} is not in your team` } });
        }
        c.shares = [...c.shares.filter((s) => s.who !== who), { who, role, connected: false }];
      } else if (req.method === 'DELETE') {
        const who = q.get('who');
        c.shares = who ? c.shares.filter((s) => s.who !== who) : [];
      }
      return json(res, 200, { computer: name, online: c.online, url: `${relay.url}/c/${name}`, shares: c.shares });
    }
    m = /^\/v1\/computers\/([^/]+)$/.exec(p);
    if (m) {
      const name = decodeURIComponent(m[1]);
      const c = computers.get(name);
      if (!c) return fail(res, 404, 'not_found', `relay: no computer ${name}`);
      if (req.method === 'DELETE') {
        computers.delete(name);
        return json(res, 200, { deleted: true });
      }
      return json(res, 200, view(name, c));
    }
    m = /^\/c\/([^/]+)(\/.*)$/.exec(p);
    if (m) {
      const c = computers.get(m[1]);
      if (!c) return fail(res, 404, 'not_found', `relay: no computer ${m[1]}`);
      if (!c.online) return fail(res, 502, 'relay', `relay: computer ${m[1]} is offline`);
      return proxy(req, res, c.target, m[2] + new URL(req.url, 'http://x').search, c.daemonToken);
    }
    return fail(res, 404, 'not_found', `relay: no route ${req.method} ${p}`);
  });
  procs.server(s);
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  relay.url = `http://127.0.0.1:${s.address().port}`;

  /** front serves /v1/relay for the daemon at space (startSpacesd's answer). */
  relay.front = async (space) => {
    let status = { attached: false, connected: false };
    const f = http.createServer(async (req, res) => {
      if (req.headers.authorization !== `Bearer ${space.token}`) return fail(res, 401, 'unauthenticated', 'wrong token');
      const p = new URL(req.url, 'http://x').pathname;
      if (p === '/v1/relay') {
        if (req.method === 'PUT') {
          relay.puts++;
          const a = JSON.parse(await body(req));
          const found = [...computers].find(([, c]) => c.token === a.token);
          if (found) Object.assign(found[1], { online: true, target: space.url, daemonToken: space.token });
          status = { attached: true, urls: a.urls, url: a.urls[0], computer: found?.[0], connected: !!found };
        } else if (req.method === 'DELETE') {
          const was = status.attached;
          const c = computers.get(status.computer);
          if (c) c.online = false;
          status = { attached: false, connected: false };
          return json(res, 200, { detached: was });
        }
        return json(res, 200, status);
      }
      if (p === '/v1/capabilities') {
        return proxy(req, res, space.url, req.url, space.token, (caps) => {
          caps.features.relay_attach = { supported: true };
          return caps;
        });
      }
      return proxy(req, res, space.url, req.url, space.token);
    });
    procs.server(f);
    await new Promise((r) => f.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${f.address().port}`;
  };
  return relay;
}
