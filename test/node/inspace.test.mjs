// In-space MCP (issue 9) as independent clients see it: the official
// TypeScript SDK client
// - through the bridge's list_tools and call_tool, to an MCP server the
//   Space declares (lib/service.mjs, built with the TypeScript SDK), and
// - on the daemon's own /mcp, with no bridge.

import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  Procs,
  clientInfo,
  connectHTTP,
  describeResult,
  errorKind,
  eventually,
  pidAlive,
  startBridgeHTTP,
  startSpacesd,
  structured,
  textOf,
} from './lib/harness.mjs';
import { results } from './lib/service.mjs';

const serviceScript = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lib', 'service.mjs');
// The bound the "mute" service gets to answer initialize, and how long past
// it the call may take: the bound is the daemon's, the slack the machine's.
const muteInitSeconds = 2;

/** writeServices declares the test's services in a file for --mcp-config. */
function writeServices(dir, markDir) {
  const file = path.join(dir, 'mcp-services.json');
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: {
        node: { command: process.execPath, args: [serviceScript], env: { MARK_DIR: markDir } },
        // Reads its stdin and never answers initialize.
        mute: { command: process.execPath, args: ['-e', 'process.stdin.resume()'], initTimeoutSeconds: muteInitSeconds },
      },
    }),
  );
  return file;
}

describe('declared MCP services through the bridge (TypeScript SDK at both ends)', { timeout: 300_000 }, () => {
  const procs = new Procs();
  let client;
  let marks;
  const call = async (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts);
  const callService = (tool, args = {}, opts) => call('call_tool', { space: 'dev', service: 'node', tool, arguments: args }, opts);

  before(async () => {
    marks = procs.dir('marks');
    const space = await startSpacesd(procs, { args: ['--mcp-config', writeServices(procs.dir('config'), marks)] });
    const bridge = await startBridgeHTTP(procs);
    client = await connectHTTP(bridge);
    const added = await call('add_space', { url: space.url, token: space.token, name: 'dev' });
    assert.ok(!added.isError, describeResult(added));
  });
  after(async () => {
    await client?.close();
    await procs.stop();
  });

  it('list_tools lists the service and its tools', async () => {
    const r = await call('list_tools', { space: 'dev', service: 'node' });
    assert.ok(!r.isError, describeResult(r));
    const l = structured(r);
    assert.equal(l.service, 'node');
    assert.deepEqual(l.tools.map((t) => t.name), ['fail', 'image', 'pid', 'slow', 'text']);
    assert.deepEqual(l.services.map((s) => s.name), ['spacesd', 'mute', 'node']);
    const one = structured(await call('list_tools', { space: 'dev', service: 'node', name: 'slo' }));
    assert.deepEqual(one.tools[0].inputSchema, { type: 'object', properties: { steps: { type: 'integer' } } });
  });

  for (const tool of ['text', 'image', 'fail']) {
    it(`a ${tool} result passes through unchanged`, async () => {
      const r = await callService(tool);
      // What the service answered, and only that: no part added, dropped
      // or changed, isError as it said (absent when it said nothing).
      const { content, structuredContent, isError } = r;
      const got = { content, ...(structuredContent !== undefined && { structuredContent }), ...(isError && { isError }) };
      assert.deepEqual(got, results[tool], describeResult(r));
    });
  }

  it('a service killed mid-session is restarted, and the next call works', async () => {
    const pid = Number(textOf(await callService('pid')));
    assert.ok(pid > 0 && pidAlive(pid));
    process.kill(pid, 'SIGKILL');
    await eventually(() => !pidAlive(pid), { what: `the service (pid ${pid}) to die` });
    // The call that meets the dead session may fail (kind mcp, retryable);
    // the next one runs in a new process.
    const next = await eventually(
      async () => {
        const r = await callService('pid');
        if (r.isError) {
          assert.equal(errorKind(r), 'mcp', describeResult(r));
          return undefined;
        }
        return r;
      },
      { what: 'a call to the restarted service' },
    );
    const newPid = Number(textOf(next));
    assert.ok(newPid > 0 && newPid !== pid, `the service answered pid ${newPid} after pid ${pid} was killed`);
    const l = structured(await call('list_tools', { space: 'dev', service: 'node', name: 'none' }));
    const node = l.services.find((s) => s.name === 'node');
    assert.equal(node.state, 'running');
    assert.equal(node.restarts, 1, JSON.stringify(node));
  });

  it('a service that never starts answers kind mcp within its bound', async () => {
    const r = await call('call_tool', { space: 'dev', service: 'mute', tool: 'anything' });
    assert.equal(errorKind(r), 'mcp', describeResult(r));
    assert.match(textOf(r), new RegExp(`did not answer initialize within ${muteInitSeconds}s`));
  });

  it('progress crosses both hops, and cancelling a long call stops it inside the service', async () => {
    const progress = [];
    const done = await callService('slow', { steps: 3 }, { onprogress: (p) => progress.push(p.progress) });
    assert.equal(textOf(done), '3 steps', describeResult(done));
    assert.deepEqual(progress, [1, 2, 3]);

    rmSync(path.join(marks, 'started'), { force: true });
    const ac = new AbortController();
    const running = callService('slow', { steps: 100000 }, { signal: ac.signal });
    await eventually(() => existsSync(path.join(marks, 'started')), { what: 'slow to start in the service' });
    ac.abort();
    await assert.rejects(running);
    await eventually(() => existsSync(path.join(marks, 'cancelled')), { what: 'the service to see the cancellation' });
  });
});

/** connectDaemon connects the TypeScript SDK client to a daemon's /mcp. */
async function connectDaemon(space, token = space.token) {
  const client = new Client(clientInfo, { capabilities: {} });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${space.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  return client;
}

describe("the daemon's own /mcp (TypeScript SDK client, no bridge)", { timeout: 300_000 }, () => {
  const procs = new Procs();
  let space;
  let client;

  before(async () => {
    space = await startSpacesd(procs, { xvfb: true });
    client = await connectDaemon(space);
  });
  after(async () => {
    await client?.close();
    await procs.stop();
  });

  it('tools/list serves the Space tools without the space argument', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['space_bash', 'space_screenshot', 'space_read', 'space_click', 'list_tools', 'call_tool']) {
      assert.ok(names.includes(n), `${n} is not served: ${names}`);
    }
    for (const t of tools) assert.equal(t.inputSchema.properties?.space, undefined, `${t.name} takes a space argument`);
  });

  it('space_bash runs in the Space', async () => {
    const r = await client.callTool({ name: 'space_bash', arguments: { command: 'echo "in $0"; exit 4' } });
    const o = structured(r);
    assert.equal(o.exit_code, 4, describeResult(r));
    assert.match(o.stdout, /^in /);
  });

  it('a screenshot comes back as an image part', async () => {
    const r = await client.callTool({ name: 'space_screenshot', arguments: {} });
    assert.ok(!r.isError, describeResult(r));
    const img = r.content.find((c) => c.type === 'image');
    assert.ok(img, `no image part: ${describeResult(r)}`);
    const bytes = Buffer.from(img.data, 'base64');
    const magic = { 'image/png': '89504e47', 'image/jpeg': 'ffd8ff' }[img.mimeType];
    assert.ok(magic, `mimeType ${img.mimeType}`);
    assert.equal(bytes.subarray(0, magic.length / 2).toString('hex'), magic);
  });

  it('without the token, or with a wrong one: 401', async () => {
    for (const auth of [undefined, 'Bearer wrong']) {
      const r = await fetch(`${space.url}/mcp`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...(auth ? { Authorization: auth } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo } }),
      });
      assert.equal(r.status, 401, `POST /mcp with ${auth}`);
      await r.body?.cancel();
    }
    await assert.rejects(connectDaemon(space, 'wrong'));
  });
});
