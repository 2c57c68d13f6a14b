// The relay tools as an independent client sees them: the official
// TypeScript MCP SDK over stdio (`cua-bridge mcp`), a bridge home logged in
// with `cua-bridge relay login`, a real cua-spacesd, and a stand-in relay
// (lib/relay.mjs; the end-to-end suite runs the real cua-relay).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Procs, bridgeBin, connectStdio, describeResult, errorKind, startSpacesd, structured, textOf } from './lib/harness.mjs';
import { startRelay } from './lib/relay.mjs';

describe('relay tools over stdio', { timeout: 120_000 }, () => {
  const procs = new Procs();
  let space;
  let relay;
  let home;
  let client;

  // Asynchronous: the stand-in relay answers from this process's event loop.
  const cli = (...args) =>
    new Promise((resolve) => {
      execFile(bridgeBin, args, { env: { ...process.env, CUA_HOME: home }, encoding: 'utf8' }, (err, stdout, stderr) =>
        resolve({ status: err ? (err.code ?? 1) : 0, stdout, stderr }),
      );
    });

  before(async () => {
    space = await startSpacesd(procs);
    relay = await startRelay(procs);
    home = path.join(procs.dir('relay-home'), 'home');
    const tokenFile = path.join(procs.dir('relay-token'), 'token');
    writeFileSync(tokenFile, relay.userToken + '\n', { mode: 0o600 });
    const login = await cli('relay', 'login', '--url', relay.url, '--token-file', tokenFile);
    assert.equal(login.status, 0, `relay login: ${login.stdout}${login.stderr}`);
    const front = await relay.front(space);
    const add = await cli('space', 'add', 'front', front, '--token-file', space.tokenFile);
    assert.equal(add.status, 0, `space add: ${add.stdout}${add.stderr}`);
    client = await connectStdio(procs, { home });
  });

  after(async () => {
    await client?.close().catch(() => {});
    await procs.stop();
  });

  const call = (name, args) => client.call(name, args, { timeout: 60_000 });

  it('lists the relay tools with their arguments and output schemas', async () => {
    const { tools } = await client.listTools();
    const reg = tools.find((t) => t.name === 'relay_register_space');
    const unreg = tools.find((t) => t.name === 'relay_unregister_space');
    assert.ok(reg && unreg, 'relay tools not listed');
    assert.deepEqual(reg.inputSchema.required, ['space']);
    assert.deepEqual(Object.keys(reg.inputSchema.properties).sort(), ['name', 'space']);
    assert.deepEqual(unreg.inputSchema.required, ['space']);
    assert.ok(reg.outputSchema && unreg.outputSchema);
  });

  it('registers a Space, reaches it as relay:<computer>, and unregisters it', async () => {
    let r = await call('relay_register_space', { space: 'front', name: 'desk' });
    assert.ok(!r.isError, describeResult(r));
    assert.deepEqual(structured(r), { space: 'front', relay_space: 'relay:desk', machine: 'desk', url: `${relay.url}/c/desk`, online: true });
    assert.equal(relay.puts, 1);

    r = await call('relay_register_space', { space: 'front', name: 'desk' });
    assert.deepEqual(structured(r).online, true);
    assert.equal(relay.puts, 1, 'registering again changed the attachment');

    r = await call('space_bash', { space: 'relay:desk', command: 'echo via the relay' });
    assert.ok(!r.isError, describeResult(r));
    assert.equal(structured(r).stdout, 'via the relay\n');

    r = await call('list_spaces', {});
    const listed = structured(r).spaces.find((s) => s.space === 'relay:desk');
    assert.equal(listed?.online, true, describeResult(r));

    r = await call('relay_unregister_space', { space: 'front' });
    assert.deepEqual(structured(r), { space: 'front', unregistered: true });
    r = await call('relay_unregister_space', { space: 'relay:desk' });
    assert.deepEqual(structured(r), { space: 'relay:desk', unregistered: false });
  });

  it('lists the sharing tools with their arguments', async () => {
    const { tools } = await client.listTools();
    const args = (name) => {
      const t = tools.find((x) => x.name === name);
      assert.ok(t?.outputSchema, `${name} not listed with an output schema`);
      return [t.inputSchema.required, Object.keys(t.inputSchema.properties).sort()];
    };
    assert.deepEqual(args('share_space'), [['space', 'who'], ['role', 'space', 'who']]);
    assert.deepEqual(args('unshare_space'), [['space'], ['space', 'who']]);
    assert.deepEqual(args('space_shares'), [['space'], ['audit', 'space']]);
  });

  it('shares a Space, passes the refusals through, and unshares it', async () => {
    let r = await call('share_space', { space: 'front', who: 'bob' });
    assert.equal(errorKind(r), 'permission_denied', textOf(r));
    assert.equal(structured(r).error.reason, 'sharing_needs_team');
    assert.match(textOf(r), /Sharing is for teams\. Start a team to share this Space\./);
    assert.ok(!relay.computers.has('front'), 'a refused first share left the Space on the relay');

    relay.team = 't1';
    relay.teammates = ['bob'];
    r = await call('share_space', { space: 'front', who: 'carol' });
    assert.equal(structured(r).error?.reason, 'share_outside_team', textOf(r));
    r = await call('share_space', { space: 'front', who: 'bob', role: 'editor' });
    assert.ok(!r.isError, describeResult(r));
    assert.deepEqual(structured(r), {
      space: 'front', machine: 'front', invitee_space: 'relay:front', url: `${relay.url}/c/front`, online: true,
      shares: [{ who: 'bob', role: 'editor', connected: false }],
    });
    r = await call('space_shares', { space: 'relay:front' });
    assert.deepEqual(structured(r).shares, [{ who: 'bob', role: 'editor', connected: false }]);
    r = await call('unshare_space', { space: 'front' });
    assert.deepEqual(structured(r), { space: 'front', machine: '', invitee_space: '', url: '', online: false, shares: [] });
    assert.ok(!relay.computers.has('front'), 'unshared from everyone, the Space stayed on the relay');
  });

  it('answers the seed kinds for bad calls', async () => {
    let r = await call('relay_register_space', { space: 'relay:desk' });
    assert.equal(errorKind(r), 'invalid_argument', textOf(r));
    r = await call('relay_register_space', { space: 'nope' });
    assert.equal(errorKind(r), 'not_found', textOf(r));
    const out = await cli('relay', 'logout');
    assert.equal(out.status, 0, out.stderr);
    r = await call('relay_register_space', { space: 'front' });
    assert.equal(errorKind(r), 'unauthenticated', textOf(r));
    assert.match(textOf(r), /relay/);
  });
});
