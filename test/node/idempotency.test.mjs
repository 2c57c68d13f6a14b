// Idempotency keys as an agent meets them: the official TypeScript MCP SDK
// calls the bridge's space_bash while the link between the bridge and the
// Space drops after the command reached the Space and before its answer
// came back. The bridge retries with the call's key, and the command runs
// once; an agent that retries a tool call itself with its idempotency_key
// gets the first answer back.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Procs, connectStdio, describeResult, startSpacesd, structured } from './lib/harness.mjs';

/**
 * cutProxy forwards TCP connections from a loopback port to target. After
 * cutNext(n), the next n answers (the first bytes the target sends back)
 * never arrive: both sides of that connection are closed instead, after
 * the request went through.
 */
async function cutProxy(procs, targetPort) {
  const state = { cuts: 0, cut: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    upstream.on('data', (d) => {
      if (state.cuts > 0) {
        state.cuts--;
        state.cut++;
        drop();
        return;
      }
      client.write(d);
    });
  });
  procs.server(server);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    cutNext(n) {
      state.cuts += n;
    },
    cutCount: () => state.cut,
  };
}

const lines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').length : 0);

describe('idempotency keys through cua-bridge', { timeout: 300_000 }, () => {
  const procs = new Procs();
  let client;
  let proxy;

  before(async () => {
    const space = await startSpacesd(procs);
    proxy = await cutProxy(procs, new URL(space.url).port);
    client = await connectStdio(procs);
    const added = await client.call('add_space', { url: `http://127.0.0.1:${proxy.port}`, token: space.token, name: 'cut' });
    assert.ok(!added.isError, `add_space: ${describeResult(added)}`);
  });

  after(async () => {
    await client?.close();
    await procs.stop();
  });

  it('space_bash runs once when the link drops before its answer', async () => {
    const file = path.join(procs.dir('bash'), 'ran.log');
    const before = proxy.cutCount();
    proxy.cutNext(1);
    const r = await client.call('space_bash', { space: 'cut', command: `echo ran >> ${file}; echo hello` });
    assert.ok(!r.isError, `space_bash through a cut link: ${describeResult(r)}`);
    assert.equal(proxy.cutCount(), before + 1, 'the proxy cut no answer: the test proves nothing');
    assert.equal(lines(file), 1, 'the command ran more than once');
    assert.equal(structured(r).stdout, 'hello\n', describeResult(r));
  });

  it('a tool call retried with its idempotency_key answers the first call', async () => {
    const file = path.join(procs.dir('retry'), 'ran.log');
    const args = { space: 'cut', command: `echo ran >> ${file}; date +%s%N`, idempotency_key: 'agent-try-7f3c' };
    const first = await client.call('space_bash', args);
    const again = await client.call('space_bash', args);
    assert.ok(!first.isError && !again.isError, `${describeResult(first)} / ${describeResult(again)}`);
    assert.equal(lines(file), 1, 'the retried tool call ran the command again');
    assert.equal(structured(again).stdout, structured(first).stdout, 'the retry answered another run');
    // Another key is another call.
    await client.call('space_bash', { ...args, idempotency_key: 'agent-try-8a01' });
    assert.equal(lines(file), 2);
  });
});
