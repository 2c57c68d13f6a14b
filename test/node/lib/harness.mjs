// Harness of the Node tests: starts the real binaries (bin/cua-spacesd and
// bin/cua-bridge, built by `make build`) on 127.0.0.1 and connects the
// official TypeScript MCP client to the bridge over stdio and over HTTP.
//
// Nothing here talks to anything but loopback.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as Client2, StreamableHTTPClientTransport as StreamableHTTPClientTransport2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransport2 } from '@modelcontextprotocol/client/stdio';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const spacesdBin = process.env.CUA_SPACESD_BIN || path.join(repoRoot, 'bin', 'cua-spacesd');
export const bridgeBin = process.env.CUA_BRIDGE_BIN || path.join(repoRoot, 'bin', 'cua-bridge');

// How long a child gets to come up before the test gives up on it. Start-up
// is milliseconds; this only bounds a broken build.
const startupTimeoutMs = 20_000;
// How long a child gets between SIGTERM and SIGKILL at cleanup.
const stopGraceMs = 5_000;

// Every MCP revision the bridge speaks, newest first. The first is the
// stateless one (no initialize); the others an initialize may ask for.
export const protocolVersions = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
export const modernVersion = '2026-07-28';
export const initializeVersions = protocolVersions.filter((v) => v < modernVersion);

// The clients the suite runs with: the 1.x SDK most hosts ship today, as it
// comes (it asks for 2025-11-25), and the 2.x client pinned to each revision
// (2.x negotiates 2026-07-28 through server/discover when pinned to it).
export const clientFlavors = [
  { name: 'SDK 1.32.2' },
  ...protocolVersions.map((version) => ({ name: `client 2.4.0 pinned to ${version}`, version })),
];

export const clientInfo = { name: 'cua-bridge-node-tests', version: '1.0.0' };

/** requireBinaries fails with the command that builds what is missing. */
export function requireBinaries() {
  for (const b of [spacesdBin, bridgeBin]) {
    if (!existsSync(b)) {
      throw new Error(`${b} is missing: run "make build" at the repository root first`);
    }
  }
}

/** tempDir makes a private temporary directory removed by the returned cleanup. */
export function tempDir(prefix) {
  return mkdtempSync(path.join(os.tmpdir(), `cua-node-${prefix}-`));
}

/** freePort asks the kernel for a free loopback port. */
export async function freePort() {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** eventually polls fn until it returns a truthy value or the deadline passes. */
export async function eventually(fn, { timeoutMs = 15_000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Procs owns every child a test file started and stops them at the end. Its
 * temporary folders share one base, which the bridges it starts take as
 * their only root (--root): the tools may use the test's files, nothing
 * else of the machine.
 */
export class Procs {
  constructor() {
    this.children = [];
    this.servers = [];
    this.base = undefined;
  }

  /** root is the folder every dir() is made in (made on first use). */
  root() {
    this.base ??= tempDir('procs');
    return this.base;
  }

  spawn(cmd, args, opts = {}) {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    child.output = '';
    const keep = (d) => {
      // Keep the tail only: enough to explain a failure.
      child.output = (child.output + d.toString()).slice(-16_384);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.exited = once(child, 'exit');
    this.children.push(child);
    return child;
  }

  dir(prefix) {
    return mkdtempSync(path.join(this.root(), `${prefix}-`));
  }

  server(s) {
    this.servers.push(s);
    return s;
  }

  async stop() {
    await Promise.all(
      this.children.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        c.kill('SIGTERM');
        const t = setTimeout(() => c.kill('SIGKILL'), stopGraceMs);
        await c.exited;
        clearTimeout(t);
      }),
    );
    for (const s of this.servers) {
      s.closeAllConnections?.();
      await new Promise((r) => s.close(r));
    }
    if (this.base) rmSync(this.base, { recursive: true, force: true });
  }
}

/** childEnv is the environment of a child: ours, minus what must not leak in. */
function childEnv(extra = {}, drop = []) {
  const env = { ...process.env, ...extra };
  for (const k of ['CUA_SPACESD_TOKEN', ...drop]) delete env[k];
  return env;
}

/**
 * startSpacesd runs cua-spacesd on 127.0.0.1 with a random port and a token
 * file. display: the X display to give it; undefined removes DISPLAY so that
 * the desktop features report unsupported. xvfb: the daemon starts its own
 * Xvfb and openbox (serve --xvfb, which answers once the window manager
 * manages windows); the display it took is answered as display. args are
 * more flags of serve (e.g. --mcp-config FILE).
 */
export async function startSpacesd(procs, { display, xvfb = false, args = [] } = {}) {
  requireBinaries();
  const dir = procs.dir('spacesd');
  const token = randomBytes(24).toString('hex');
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  const port = await freePort();
  const env = display ? childEnv({ DISPLAY: display }) : childEnv({}, ['DISPLAY', 'WAYLAND_DISPLAY']);
  const displayArgs = xvfb ? ['--xvfb'] : display ? [] : ['--display', ''];
  const child = procs.spawn(spacesdBin, ['serve', '--listen', `127.0.0.1:${port}`, '--token-file', tokenFile, ...displayArgs, ...args], { env });
  // The start-up log, until the daemon answers (procs keeps only a tail).
  let log = '';
  const keepLog = (d) => {
    log += d.toString();
  };
  child.stderr.on('data', keepLog);
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`cua-spacesd exited: ${child.output}`);
      const r = await fetch(`${url}/health`);
      const h = await r.json();
      return h.daemon === 'cua-spacesd';
    },
    { timeoutMs: startupTimeoutMs, what: 'cua-spacesd /health' },
  );
  if (xvfb) {
    // The daemon names the display it serves in its start-up log line.
    const servingLine = () =>
      log
        .split('\n')
        .map((l) => {
          try {
            return JSON.parse(l);
          } catch {
            return undefined;
          }
        })
        .find((l) => l?.msg === 'cua-spacesd serving');
    display = (await eventually(servingLine, { timeoutMs: startupTimeoutMs, what: 'the display cua-spacesd --xvfb started' })).display;
    if (!display) throw new Error(`cua-spacesd --xvfb logged no display: ${log}`);
  }
  child.stderr.off('data', keepLog);
  return { url, token, tokenFile, dir, child, display, port };
}

/**
 * pasteClipboard reads the CLIPBOARD selection of a Space's display with
 * xclip, a real X program pasting it. It runs in the Space, started by its
 * daemon (POST /v1/exec): a display the daemon started lets in only
 * processes that hold its cookie, and the daemon hands it to what it
 * starts. Without xclip it answers undefined (CI installs it, and there
 * its absence fails).
 */
export async function pasteClipboard(space) {
  const r = await fetch(`${space.url}/v1/exec`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${space.token}` },
    body: JSON.stringify({ argv: ['xclip', '-o', '-selection', 'clipboard'], timeout_ms: startupTimeoutMs }),
  });
  const res = await r.json();
  if (r.status === 404 && res.error?.kind === 'not_found') {
    if (process.env.CI === 'true') throw new Error('xclip is not installed, and CI=true requires it (.ci/run installs it)');
    return undefined;
  }
  if (r.status !== 200 || res.exit_code !== 0) throw new Error(`xclip -o in the Space: ${r.status} ${JSON.stringify(res)}`);
  return res.stdout;
}

/** startBridgeHTTP runs `cua-bridge serve` on a random loopback port. */
export async function startBridgeHTTP(procs, { home } = {}) {
  requireBinaries();
  const dir = procs.dir('bridge');
  home ??= path.join(dir, 'home');
  const token = randomBytes(24).toString('hex');
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  const port = await freePort();
  const child = procs.spawn(bridgeBin, ['serve', '--listen', `127.0.0.1:${port}`, '--token-file', tokenFile, '--root', procs.root()], {
    env: childEnv({ CUA_HOME: home }),
  });
  const origin = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`cua-bridge serve exited: ${child.output}`);
      // Any HTTP answer means it listens; auth is checked by the tests.
      await fetch(`${origin}/mcp`, { method: 'GET' });
      return true;
    },
    { timeoutMs: startupTimeoutMs, what: 'cua-bridge serve to listen' },
  );
  return { origin, url: `${origin}/mcp`, token, tokenFile, home, port, child };
}

/**
 * newClient makes the client of a flavor (see clientFlavors). Its call(name,
 * args, opts) calls a tool the same way on both SDKs (their callTool
 * signatures differ), and negotiated() says the revision it speaks.
 */
function newClient(version) {
  if (version === undefined) {
    const client = new Client(clientInfo, { capabilities: {} });
    client.call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts);
    client.negotiated = () => client.transport?.protocolVersion;
    return { client, Stdio: StdioClientTransport, HTTP: StreamableHTTPClientTransport };
  }
  const options =
    version >= modernVersion
      ? { versionNegotiation: { mode: { pin: version } } }
      : { supportedProtocolVersions: [version] };
  const client = new Client2(clientInfo, options);
  client.call = (name, args, opts) => client.callTool({ name, arguments: args }, opts);
  client.negotiated = () => client.getNegotiatedProtocolVersion();
  return { client, Stdio: StdioClientTransport2, HTTP: StreamableHTTPClientTransport2 };
}

/** connectHTTP connects a client to a bridge over streamable HTTP. */
export async function connectHTTP(bridge, { token = bridge.token, version } = {}) {
  const { client, HTTP } = newClient(version);
  const transport = new HTTP(new URL(bridge.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** connectStdio starts `cua-bridge mcp` as the client's stdio child. */
export async function connectStdio(procs, { home, version } = {}) {
  requireBinaries();
  home ??= path.join(procs.dir('bridge-stdio'), 'home');
  const { client, Stdio } = newClient(version);
  const transport = new Stdio({
    command: bridgeBin,
    args: ['mcp', '--root', procs.root()],
    env: childEnv({ CUA_HOME: home }),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => {
    stderr = (stderr + d.toString()).slice(-16_384);
  });
  await client.connect(transport);
  client.bridgeStderr = () => stderr;
  client.home = home;
  return client;
}

/**
 * plainHTTPServer is an HTTP server that is not cua-spacesd: it answers
 * every path with 200 and a page, as a random web server would.
 */
export async function plainHTTPServer(procs) {
  const s = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end('<html><body>just a web server</body></html>');
  });
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  procs.server(s);
  return `http://127.0.0.1:${s.address().port}`;
}

/** toolResult returns the structured part of a tool result, or its text as JSON. */
export function structured(result) {
  if (result.structuredContent) return result.structuredContent;
  const text = (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** textOf joins a tool result's text parts. */
export function textOf(result) {
  return (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

/** errorKind returns structuredContent.error.kind of an isError result. */
export function errorKind(result) {
  return result?.structuredContent?.error?.kind;
}

/** describeResult is a short rendering of a result for assertion messages. */
export function describeResult(result) {
  return JSON.stringify(result).slice(0, 2000);
}

/** pidAlive reports whether pid runs (a zombie counts as gone). */
export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (err.code === 'ESRCH') return false;
    throw err;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name in parentheses.
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/**
 * authProxy is a loopback reverse proxy that adds the bridge's bearer token
 * to every request and passes everything else through unchanged: for clients
 * that cannot send headers (the conformance suite). A Host or Origin naming
 * the proxy itself is rewritten to the bridge's; any other (a rebinding
 * attacker's) goes through as sent, so the bridge's own checks still see it.
 * A daemon ({port, token} of startSpacesd) is fronted the same way.
 */
export async function authProxy(procs, bridge) {
  const s = http.createServer((req, res) => {
    const self = req.socket.localAddress === '::ffff:127.0.0.1' ? '127.0.0.1' : req.socket.localAddress;
    const selfHosts = new Set([`${self}:${s.address().port}`, `localhost:${s.address().port}`]);
    const headers = { ...req.headers, authorization: `Bearer ${bridge.token}` };
    if (selfHosts.has(headers.host)) headers.host = `127.0.0.1:${bridge.port}`;
    if (headers.origin) {
      try {
        const o = new URL(headers.origin);
        if (selfHosts.has(o.host)) headers.origin = `http://127.0.0.1:${bridge.port}`;
      } catch {
        // A malformed Origin goes through as sent.
      }
    }
    const up = http.request(
      { host: '127.0.0.1', port: bridge.port, method: req.method, path: req.url, headers },
      (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        res.flushHeaders();
        ur.pipe(res);
      },
    );
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  procs.server(s);
  return `http://127.0.0.1:${s.address().port}/mcp`;
}

/**
 * rawInitialize sends one initialize request over HTTP with fetch and
 * returns the JSON-RPC response, whether the bridge answered JSON or SSE.
 */
export async function rawInitialize(bridge, version, { token = bridge.token } = {}) {
  const r = await fetch(bridge.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo },
    }),
  });
  const body = await r.text();
  const sessionId = r.headers.get('mcp-session-id');
  let msg;
  if ((r.headers.get('content-type') || '').includes('text/event-stream')) {
    for (const line of body.split('\n')) {
      if (line.startsWith('data:')) {
        const m = JSON.parse(line.slice(5));
        if (m.id === 1) msg = m;
      }
    }
  } else if ((r.headers.get('content-type') || '').includes('json') && body) {
    msg = JSON.parse(body);
  }
  if (sessionId) {
    // End the session so the bridge does not keep it around.
    await fetch(bridge.url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': sessionId, Authorization: `Bearer ${token}` },
    }).catch(() => {});
  }
  return { status: r.status, msg, sessionId, body };
}

/**
 * rawStdioInitialize starts `cua-bridge mcp`, sends one initialize line and
 * returns the response.
 */
export async function rawStdioInitialize(procs, version) {
  const home = path.join(procs.dir('bridge-raw'), 'home');
  const child = procs.spawn(bridgeBin, ['mcp', '--root', procs.root()], { env: childEnv({ CUA_HOME: home }), stdio: ['pipe', 'pipe', 'pipe'] });
  let buf = '';
  const answer = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!line.trim()) continue;
        const m = JSON.parse(line);
        if (m.id === 1) resolve(m);
      }
    });
    child.on('exit', (code) => reject(new Error(`cua-bridge mcp exited ${code} before answering: ${child.output}`)));
  });
  child.stdin.write(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo },
    }) + '\n',
  );
  try {
    return await answer;
  } finally {
    child.stdin.end();
  }
}
