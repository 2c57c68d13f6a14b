// The bridge as an independent client sees it: the official TypeScript MCP
// SDK over stdio (`cua-bridge mcp`) and streamable HTTP (`cua-bridge serve`),
// against a real cua-spacesd on loopback.

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  Procs,
  clientFlavors,
  connectHTTP,
  connectStdio,
  describeResult,
  errorKind,
  eventually,
  pasteClipboard,
  initializeVersions,
  modernVersion,
  pidAlive,
  plainHTTPServer,
  rawInitialize,
  rawStdioInitialize,
  startBridgeHTTP,
  startSpacesd,
  structured,
  textOf,
} from './lib/harness.mjs';

// Size of the transfer round trip the issue asks for.
const transferBytes = 50 * 1024 * 1024;
// Transfers and long commands may take minutes on a slow runner; the bridge
// allows 900 s, and so does the client here.
const longCallMs = 900_000;
// Desktop tools, in order of preference, for the capability_missing case: the
// test daemon runs without DISPLAY, so each of these lacks its feature.
const desktopTools = ['space_screenshot', 'list_space_windows', 'space_click', 'space_type', 'space_press_key', 'launch_app'];

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

// A background process that prints a numbered line every 200 ms and
// answers each line of its stdin with "got <line>".
const ticker = `(i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.2; done) & while read l; do echo "got $l"; done`;

/** tickCount checks that the tick lines of out count 0, 1, 2, ... with none lost or repeated. */
function tickCount(out) {
  let n = 0;
  for (const line of out.split('\n')) {
    const m = /^tick (\d+)$/.exec(line);
    if (!m) continue;
    assert.equal(Number(m[1]), n, `tick ${m[1]} where tick ${n} was due: a line was lost or repeated in\n${out}`);
    n++;
  }
  return n;
}

/**
 * OutputReader reads a background process's output with
 * space_process_output, each call from the offsets the last one answered.
 */
class OutputReader {
  constructor(call, space, id) {
    Object.assign(this, { call, space, id, stdoutOffset: 0, stderrOffset: 0, stdout: '', stderr: '', last: undefined, reads: 0 });
  }

  async read() {
    const r = await this.call('space_process_output', {
      space: this.space, id: this.id, stdout_offset: this.stdoutOffset, stderr_offset: this.stderrOffset, wait_ms: 5000,
    });
    assert.ok(!r.isError, `space_process_output: ${describeResult(r)}`);
    const o = structured(r);
    assert.equal(o.stdout_offset, this.stdoutOffset + Buffer.byteLength(o.stdout) + (o.lost_stdout_bytes ?? 0), describeResult(r));
    this.stdout += o.stdout;
    this.stderr += o.stderr;
    this.stdoutOffset = o.stdout_offset;
    this.stderrOffset = o.stderr_offset;
    this.last = o;
    this.reads++;
    return o;
  }

  /** until reads until the stdout read so far satisfies cond. */
  async until(what, cond) {
    while (!cond(this.stdout)) {
      const o = await this.read();
      if (o.state === 'exited' && !cond(this.stdout)) assert.fail(`the process ended before ${what}: ${this.stdout}`);
    }
  }
}

// One desktop for the whole file: a daemon that started its own Xvfb and
// openbox (serve --xvfb), registered by every suite as "desk".
const deskProcs = new Procs();
let deskStarted;
const desktop = () => (deskStarted ??= startSpacesd(deskProcs, { xvfb: true }));
after(() => deskProcs.stop());

for (const flavor of clientFlavors) for (const transport of ['stdio', 'http']) {
  // The transport-level checks (raw initialize, bearer) do not depend on
  // the client: they run once per transport, with the SDK 1.x suite.
  const firstFlavor = flavor === clientFlavors[0];
  describe(`cua-bridge over ${transport}, ${flavor.name}`, { timeout: 600_000 }, () => {
    const procs = new Procs();
    let space;
    let bridge;
    let client;
    let tools = [];

    before(async () => {
      space = await startSpacesd(procs);
      if (transport === 'http') {
        bridge = await startBridgeHTTP(procs);
        client = await connectHTTP(bridge, { version: flavor.version });
      } else {
        client = await connectStdio(procs, { version: flavor.version });
      }
    });

    after(async () => {
      await client?.close().catch(() => {});
      await procs.stop();
    });

    const call = (name, args, opts = {}) => client.call(name, args, { timeout: longCallMs, ...opts });

    const mustSucceed = async (name, args, opts) => {
      const r = await call(name, args, opts);
      assert.ok(!r.isError, `${name} failed: ${describeResult(r)}`);
      return r;
    };

    if (flavor.version) {
      it(`speaks ${flavor.version} with a client pinned to it`, () => {
        assert.equal(client.negotiated(), flavor.version);
      });
    }

    if (firstFlavor) it('answers initialize with each protocol version that has one', async () => {
      for (const v of initializeVersions) {
        const msg =
          transport === 'http'
            ? (await rawInitialize(bridge, v)).msg
            : await rawStdioInitialize(procs, v);
        assert.ok(msg?.result, `initialize ${v}: ${JSON.stringify(msg)}`);
        assert.equal(msg.result.protocolVersion, v, `initialize ${v} answered ${msg.result.protocolVersion}`);
        assert.ok(msg.result.capabilities?.tools, `initialize ${v}: no tools capability`);
        assert.ok(msg.result.serverInfo?.name, `initialize ${v}: no serverInfo`);
      }
      // The stateless revision has no initialize: asked there, the bridge
      // answers the newest revision that has one.
      const msg =
        transport === 'http'
          ? (await rawInitialize(bridge, modernVersion)).msg
          : await rawStdioInitialize(procs, modernVersion);
      assert.equal(msg?.result?.protocolVersion, initializeVersions[0]);
    });

    if (transport === 'http' && firstFlavor) {
      it('refuses a wrong bearer token with 401', async () => {
        const { status } = await rawInitialize(bridge, initializeVersions[0], { token: 'not-the-token' });
        assert.equal(status, 401);
        await assert.rejects(connectHTTP(bridge, { token: 'not-the-token' }));
      });
    }

    it('lists tools, each with a description and an input schema', async () => {
      ({ tools } = await client.listTools());
      assert.ok(tools.length > 0, 'no tools');
      for (const t of tools) {
        assert.ok(t.description && t.description.trim(), `${t.name}: no description`);
        assert.equal(t.inputSchema?.type, 'object', `${t.name}: input schema is not an object schema`);
      }
      const names = new Set(tools.map((t) => t.name));
      for (const want of [
        'add_space', 'remove_space', 'list_spaces', 'space_capabilities', 'space_bash',
        'space_read', 'space_write', 'space_ls', 'upload', 'download',
        'space_process_start', 'space_process_output', 'space_process_input', 'space_process_signal', 'space_processes',
        'space_clipboard_get', 'space_clipboard_set', 'space_window',
      ]) {
        assert.ok(names.has(want), `tool ${want} missing from tools/list`);
      }
    });

    it('adds a Space and runs a command in it', async () => {
      const added = await mustSucceed('add_space', { url: space.url, token: space.token, name: 'dev' });
      const s = structured(added);
      assert.equal(s?.name, 'dev', `add_space answered ${describeResult(added)}`);

      const listed = structured(await mustSucceed('list_spaces', {}));
      const entries = Array.isArray(listed) ? listed : listed?.spaces;
      assert.ok(entries?.some((e) => e.name === 'dev' && e.online), `list_spaces: ${JSON.stringify(listed)}`);

      const r = await mustSucceed('space_bash', { space: 'dev', command: 'echo hello; echo oops >&2; exit 3' });
      const out = structured(r);
      assert.equal(out.stdout, 'hello\n');
      assert.equal(out.stderr, 'oops\n');
      assert.equal(out.exit_code, 3);
      assert.equal(out.timed_out, false);
      assert.match(textOf(r), /hello/);
      assert.match(textOf(r), /\[exit 3\]/);
    });

    it('runs a background process: offsets lose and repeat nothing, stdin, a signal, and it outlives the client', async () => {
      const started = await mustSucceed('space_process_start', { space: 'dev', command: ticker, stdin: true });
      const proc = structured(started);
      assert.ok(proc.id && proc.pid > 0 && proc.state === 'running', describeResult(started));
      try {
        const reader = new OutputReader(call, 'dev', proc.id);
        await reader.until('three ticks', (out) => (out.match(/tick /g) || []).length >= 3);
        // At least two reads, the second from the first one's offsets.
        if (reader.reads < 2) await reader.read();
        const first = tickCount(reader.stdout);

        await mustSucceed('space_process_input', { space: 'dev', id: proc.id, text: 'hello\n' });
        await reader.until('the echo of its stdin', (out) => out.includes('got hello\n'));

        // A new client (for stdio, a new bridge process on the same
        // registry) finds the process running and reads on from the offsets.
        const home = client.home;
        await client.close();
        client =
          transport === 'http'
            ? await connectHTTP(bridge, { version: flavor.version })
            : await connectStdio(procs, { home, version: flavor.version });
        const listed = structured(await mustSucceed('space_processes', { space: 'dev' }));
        const mine = listed.processes.find((p) => p.id === proc.id);
        assert.equal(mine?.state, 'running', `after the reconnect: ${JSON.stringify(listed)}`);
        await reader.until('two more ticks', (out) => tickCount(out) >= first + 2);

        const sig = await mustSucceed('space_process_signal', { space: 'dev', id: proc.id, signal: 'TERM' });
        const ended = structured(sig);
        assert.equal(ended.state, 'exited', describeResult(sig));
        assert.ok(ended.signal, `no signal in the exit status: ${describeResult(sig)}`);
        while (reader.last.state !== 'exited') await reader.read();
        assert.equal(reader.last.signal, ended.signal);
        assert.match(textOf(await call('space_process_output', { space: 'dev', id: proc.id, stdout_offset: reader.stdoutOffset })), /signal/);
        tickCount(reader.stdout);
      } finally {
        await call('space_process_signal', { space: 'dev', id: proc.id, signal: 'KILL' });
      }
    });

    it('uses the clipboard and windows of a desktop under Xvfb and openbox', async () => {
      const desk = await desktop();
      await mustSucceed('add_space', { url: desk.url, token: desk.token, name: 'desk' });

      const text = 'Привет ✓';
      await mustSucceed('space_clipboard_set', { space: 'desk', text });
      assert.equal(structured(await mustSucceed('space_clipboard_get', { space: 'desk' })).text, text);
      const pasted = await pasteClipboard(desk);
      if (pasted !== undefined) assert.equal(pasted, text, 'xclip pasted something else');

      const launched = structured(await mustSucceed('launch_app', { space: 'desk', argv: ['xterm', '-e', 'sleep', '600'] }));
      const id = launched.window?.window_id;
      assert.ok(id, `launch_app answered no window: ${JSON.stringify(launched)}`);
      const listed = async () => {
        const ws = structured(await mustSucceed('list_space_windows', { space: 'desk' })).windows;
        return ws.find((w) => w.window_id === id);
      };
      const act = async (args) => structured(await mustSucceed('space_window', { space: 'desk', window_id: id, ...args }));
      try {
        // The daemon waits up to 2 s for an xterm's move and resize to
        // settle (its border and character cells keep the bounds off the
        // request), the same in every flavor: those run with the first.
        if (firstFlavor) {
          const moved = await act({ action: 'move', x: 150, y: 100 });
          let w = await listed();
          assert.deepEqual(w.bounds, moved.window.bounds);
          assert.ok(Math.abs(w.bounds.x - 150) <= 2 && Math.abs(w.bounds.y - 100) <= 2, JSON.stringify(w.bounds));
          const resized = await act({ action: 'resize', width: 400, height: 250 });
          w = await listed();
          assert.deepEqual(w.bounds, resized.window.bounds);
          assert.ok(w.bounds.width <= 400 && w.bounds.width > 360 && w.bounds.height <= 250 && w.bounds.height > 210, JSON.stringify(w.bounds));
        }
        const normal = (await listed()).bounds;
        for (const [action, state] of [['minimize', 'minimized'], ['maximize', 'maximized'], ['restore', 'normal']]) {
          const a = await act({ action });
          const w = await listed();
          assert.equal(a.window.state, state, `${action} answered ${JSON.stringify(a)}`);
          assert.equal(w.state, state, `${action}: listed ${JSON.stringify(w)}`);
          if (state === 'maximized') assert.ok(w.bounds.width > normal.width && w.bounds.height > normal.height, JSON.stringify(w.bounds));
          if (state === 'minimized') assert.equal(w.on_screen, false);
        }
        const closed = await act({ action: 'close' });
        assert.equal(closed.closed, true, JSON.stringify(closed));
        assert.equal(await listed(), undefined, 'the closed xterm is still listed');
      } finally {
        await call('space_window', { space: 'desk', window_id: id, action: 'close' });
      }
    });

    it('writes a file and reads it back', async () => {
      const dir = procs.dir('rw');
      const file = path.join(dir, 'note.txt');
      const content = `héllo from ${transport}\nline two\n`;
      const w = await mustSucceed('space_write', { space: 'dev', path: file, content });
      assert.match(textOf(w), new RegExp(sha256(Buffer.from(content))), `space_write: ${textOf(w)}`);
      assert.equal(readFileSync(file, 'utf8'), content);
      const r = await mustSucceed('space_read', { space: 'dev', path: file });
      assert.equal(textOf(r), content);
    });

    it('uploads and downloads 50 MB with equal sha256 and progress', async () => {
      const local = procs.dir('xfer-local');
      const remote = procs.dir('xfer-space');
      const data = randomBytes(transferBytes);
      const want = sha256(data);
      const src = path.join(local, 'big.bin');
      writeFileSync(src, data);

      const upProgress = [];
      const up = await mustSucceed(
        'upload',
        { space: 'dev', path: src, dest: path.join(remote, 'big.bin') },
        { onprogress: (p) => upProgress.push(p), resetTimeoutOnProgress: true },
      );
      const upRes = structured(up);
      assert.equal(upRes?.sha256, want, `upload: ${describeResult(up)}`);
      assert.equal(upRes.verified, true);
      assert.equal(upRes.bytes, transferBytes);
      const landed = upRes.dest || path.join(remote, 'big.bin');
      assert.equal(sha256(readFileSync(landed)), want, 'the file in the Space differs');
      assert.ok(upProgress.length > 0, 'upload sent no progress notification');

      const downProgress = [];
      const dest = path.join(local, 'back.bin');
      const down = await mustSucceed(
        'download',
        { space: 'dev', path: landed, dest },
        { onprogress: (p) => downProgress.push(p), resetTimeoutOnProgress: true },
      );
      const downRes = structured(down);
      assert.equal(downRes?.sha256, want, `download: ${describeResult(down)}`);
      assert.equal(sha256(readFileSync(downRes.dest || dest)), want, 'the downloaded file differs');
      assert.ok(downProgress.length > 0, 'download sent no progress notification');
      for (const p of [...upProgress, ...downProgress]) {
        assert.ok(p.progress >= 0 && (p.total === undefined || p.progress <= p.total), JSON.stringify(p));
      }

      // A second download to the same place must not overwrite the first.
      const again = structured(await mustSucceed('download', { space: 'dev', path: landed, dest }));
      assert.notEqual(again.dest, dest, 'download overwrote an existing file');
      assert.equal(path.basename(again.dest), 'back (1).bin');
    });

    it('keeps upload and download inside its roots and out of $CUA_HOME', async () => {
      const home = transport === 'http' ? bridge.home : client.home;
      const remote = procs.dir('confined-space');
      const src = path.join(remote, 'payload.txt');
      writeFileSync(src, 'payload');
      const outside = path.join(os.tmpdir(), `cua-node-outside-${randomBytes(6).toString('hex')}`);
      for (const [tool, args, mention] of [
        ['upload', { space: 'dev', path: path.join(home, 'tokens.json'), dest: remote + '/' }, '$CUA_HOME'],
        ['upload', { space: 'dev', path: '/etc/passwd', dest: remote + '/' }, 'outside the folders'],
        ['download', { space: 'dev', path: src, dest: path.join(home, 'planted.json') }, '$CUA_HOME'],
        ['download', { space: 'dev', path: src, dest: path.join(outside, 'planted.txt') }, 'outside the folders'],
      ]) {
        const r = await call(tool, args);
        assert.equal(errorKind(r), 'invalid_argument', `${tool} ${JSON.stringify(args)}: ${describeResult(r)}`);
        assert.ok(textOf(r).includes(mention), `${tool}: ${textOf(r)}`);
      }
      assert.ok(!existsSync(path.join(remote, 'tokens.json')), 'the registry\'s tokens reached the Space');
      assert.ok(!existsSync(path.join(remote, 'passwd')), '/etc/passwd reached the Space');
      assert.ok(!existsSync(path.join(home, 'planted.json')), 'a download wrote into $CUA_HOME');
      assert.ok(!existsSync(outside), 'a download wrote outside the roots');
    });

    it('cancelling a long space_bash stops it in the Space', async () => {
      const dir = procs.dir('cancel');
      const pidFile = path.join(dir, 'pid');
      const marker = path.join(dir, 'marker');
      const ac = new AbortController();
      const pending = call(
        'space_bash',
        { space: 'dev', command: `sleep 300 & echo $! > ${pidFile}; wait; touch ${marker}`, timeout: 600 },
        { signal: ac.signal },
      );
      const pid = await eventually(
        () => {
          const s = existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim();
          return s ? Number(s) : 0;
        },
        { what: 'the command to start in the Space' },
      );
      assert.ok(pidAlive(pid), 'sleep is not running');
      ac.abort();
      await assert.rejects(pending);
      await eventually(() => !pidAlive(pid), { what: `sleep (pid ${pid}) to be killed after the cancel` });
      // The shell that would touch the marker died with its child.
      assert.equal(existsSync(marker), false, 'the command went on after the cancel');
    });

    describe('tool failures are isError envelopes with a kind', () => {
      const expectKind = (r, kind) => {
        assert.equal(r.isError, true, `expected isError: ${describeResult(r)}`);
        assert.equal(errorKind(r), kind, `expected kind ${kind}: ${describeResult(r)}`);
        assert.ok(r.structuredContent.error.message, 'error without a message');
        assert.match(textOf(r), /^error: /);
      };

      // A Space with a bad token or URL may be refused at add_space or
      // accepted and refused at first use: both are fine, the kind is not.
      const addThenUse = async (name, url, token, kind) => {
        const added = await call('add_space', { url, token, name });
        if (added.isError) return expectKind(added, kind);
        try {
          expectKind(await call('space_bash', { space: name, command: 'true' }), kind);
        } finally {
          await call('remove_space', { space: name });
        }
      };

      it('unauthenticated: a wrong Space token', async () => {
        await addThenUse('badtoken', space.url, 'wrong-token', 'unauthenticated');
      });

      it('spacesd_not_available: a web server that is not spacesd', async () => {
        await addThenUse('notspacesd', await plainHTTPServer(procs), 'some-token', 'spacesd_not_available');
      });

      // From 2025-11-25 on, arguments that do not fit a tool are a tool error
      // the model reads (SEP-1303); before, a JSON-RPC -32602. The 1.x SDK
      // asks for 2025-11-25.
      const version = flavor.version ?? '2025-11-25';
      it(`invalid arguments: ${version >= '2025-11-25' ? 'a tool error of kind invalid_argument' : 'JSON-RPC -32602'}`, async () => {
        const pending = call('space_bash', { space: 'dev', command: 42 });
        if (version >= '2025-11-25') {
          const r = await pending;
          expectKind(r, 'invalid_argument');
          assert.match(r.structuredContent.error.message, /command/);
        } else {
          await assert.rejects(pending, (e) => e.code === -32602 && /command/.test(e.message));
        }
      });

      it('an unknown tool: JSON-RPC -32601, as the transport document says', async () => {
        await assert.rejects(call('no_such_tool', {}), (e) => e.code === -32601);
      });

      it('not_found: an unknown Space', async () => {
        expectKind(await call('space_bash', { space: 'no-such-space', command: 'true' }), 'not_found');
      });

      it('capability_missing: the window and clipboard tools against a Space without a display', async () => {
        for (const [tool, args, feature] of [
          ['space_window', { window_id: 1, action: 'minimize' }, 'windows'],
          ['space_clipboard_get', {}, 'clipboard.text'],
          ['space_clipboard_set', { text: 'x' }, 'clipboard.text'],
        ]) {
          const r = await call(tool, { space: 'dev', ...args });
          expectKind(r, 'capability_missing');
          assert.ok(r.structuredContent.error.message.includes(feature), `${tool}: ${describeResult(r)}`);
        }
      });

      it('capability_missing: a desktop tool against a Space without a display', async () => {
        const tool = desktopTools.find((n) => tools.some((x) => x.name === n));
        assert.ok(tool, `the bridge lists none of ${desktopTools.join(', ')}`);
        const args = { space: 'dev' };
        if (tool === 'space_click') Object.assign(args, { x: 1, y: 1 });
        if (tool === 'space_type') args.text = 'x';
        if (tool === 'space_press_key') args.key = 'Return';
        if (tool === 'launch_app') args.app = 'xterm';
        const r = await call(tool, args);
        expectKind(r, 'capability_missing');
        assert.match(r.structuredContent.error.message, /windows|screenshot|input|launch_app/);
      });
    });
  });
}
