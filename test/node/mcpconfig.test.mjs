// `cua-bridge mcp-config` as each MCP host would use its output: the text is
// parsed in the host's own format (JSON, TOML, or a shell line split by a
// real sh), the server it names is started or reached exactly as the config
// says, and the official TypeScript SDK client initializes and lists tools,
// over stdio and over streamable HTTP.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parse as parseTOML } from 'smol-toml';

import { Procs, bridgeBin, clientInfo, eventually, freePort, requireBinaries, structured } from './lib/harness.mjs';

const clients = ['claude-code', 'claude-desktop', 'cursor', 'vscode', 'codex', 'generic'];
const serverName = 'cua-bridge';
const tokenEnv = 'CUA_BRIDGE_TOKEN';
// A Space registered (unverified) in the test's registry: a server that
// lists it reads that registry.
const markerSpace = 'mcpconfig-marker';

/** mcpConfig runs `cua-bridge mcp-config` from bin, with CUA_HOME = home. */
function mcpConfig(bin, home, args) {
  const env = { PATH: process.env.PATH, CUA_HOME: home };
  const r = spawnSync(bin, ['mcp-config', ...args], { env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** shellWords splits line as sh does, `claude` printing its own argv. */
function shellWords(line) {
  const r = spawnSync('sh', ['-c', `claude() { printf '%s\\0' claude "$@"; }\n${line}`], {
    env: { PATH: process.env.PATH },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, `sh: ${r.stderr}`);
  assert.equal(r.stderr, '', `sh: ${r.stderr}`);
  return r.stdout.replace(/\0$/, '').split('\0');
}

/**
 * claudeAdd reads `claude mcp add` arguments as Claude Code's parser does:
 * options with a value, -e/-H taking every following word up to the next
 * option, positionals name, command-or-URL and args, and `--` ending options.
 */
function claudeAdd(argv) {
  assert.deepEqual(argv.slice(0, 3), ['claude', 'mcp', 'add']);
  const opts = { env: [], header: [] };
  const pos = [];
  for (let i = 3; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      pos.push(...argv.slice(i + 1));
      break;
    }
    const variadic = { '-e': 'env', '--env': 'env', '-H': 'header', '--header': 'header' }[a];
    const single = { '-t': 'transport', '--transport': 'transport', '-s': 'scope', '--scope': 'scope' }[a];
    if (variadic) {
      while (i + 1 < argv.length && !argv[i + 1].startsWith('-')) opts[variadic].push(argv[++i]);
    } else if (single) {
      opts[single] = argv[++i];
    } else {
      assert.ok(!a.startsWith('-'), `unknown claude mcp add option ${a}`);
      pos.push(a);
    }
  }
  const [name, commandOrUrl, ...args] = pos;
  return { ...opts, name, commandOrUrl, args };
}

/**
 * hostView is what the host takes from the config: { command, args, env }
 * for stdio, { url, headers } for HTTP, plus Codex's bearer_token_env_var
 * and VS Code's inputs.
 */
function hostView(client, text) {
  if (client === 'claude-code') {
    const add = claudeAdd(shellWords(text));
    assert.equal(add.name, serverName);
    const env = Object.fromEntries(add.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    if (add.transport === 'http') {
      const headers = Object.fromEntries(add.header.map((h) => [h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]));
      return { url: add.commandOrUrl, headers };
    }
    assert.equal(add.transport, 'stdio');
    return { command: add.commandOrUrl, args: add.args, env };
  }
  if (client === 'codex') {
    const doc = parseTOML(text);
    const s = doc.mcp_servers?.[serverName];
    assert.ok(s, `no [mcp_servers.${serverName}] in:\n${text}`);
    if (s.url) return { url: s.url, headers: s.http_headers ?? {}, bearerTokenEnvVar: s.bearer_token_env_var };
    return { command: s.command, args: s.args ?? [], env: s.env ?? {} };
  }
  const doc = JSON.parse(text);
  const servers = client === 'vscode' ? doc.servers : doc.mcpServers;
  const s = servers?.[serverName];
  assert.ok(s, `no ${serverName} server in:\n${text}`);
  if (client === 'vscode') assert.ok(s.type === 'stdio' || s.type === 'http', `vscode server type ${s.type}`);
  if (s.url) return { url: s.url, headers: s.headers ?? {}, inputs: doc.inputs ?? [] };
  return { command: s.command, args: s.args ?? [], env: s.env ?? {} };
}

/**
 * asHost resolves the references a host resolves in header values, from its
 * environment (env) or, for VS Code, from what the user typed at its prompt
 * (typed, by input id). Anything left unresolved fails the test.
 */
function asHost(client, view, { env, typed }) {
  const headers = { ...view.headers };
  if (view.bearerTokenEnvVar) headers.Authorization = `Bearer ${env[view.bearerTokenEnvVar]}`;
  for (const [k, v] of Object.entries(headers)) {
    let r = v;
    if (client === 'claude-code' || client === 'generic') r = r.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, n) => env[n] ?? '');
    if (client === 'cursor') r = r.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, n) => env[n] ?? '');
    if (client === 'vscode') {
      r = r.replace(/\$\{input:([^}]+)\}/g, (_, id) => {
        const input = view.inputs.find((i) => i.id === id);
        assert.ok(input?.type === 'promptString' && input.password, `input ${id} is not a password prompt`);
        return typed[id];
      });
    }
    assert.ok(!r.includes('${'), `${client}: ${k} still holds a reference after resolution: ${r}`);
    headers[k] = r;
  }
  return headers;
}

async function listToolsAndSpaces(client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes('list_spaces') && names.includes('space_bash'), `tools/list: ${names}`);
  const listed = structured(await client.callTool({ name: 'list_spaces', arguments: {} }));
  const entries = Array.isArray(listed) ? listed : listed?.spaces;
  return entries?.map((e) => e.name) ?? [];
}

describe('cua-bridge mcp-config', { timeout: 300_000 }, () => {
  const procs = new Procs();
  let bin;
  let home;
  let elsewhere;

  before(() => {
    requireBinaries();
    const dir = procs.dir('mcpconfig');
    // Paths a naive config would break: spaces, quotes, $ in the binary's
    // folder and in the registry's.
    const binDir = path.join(dir, `bin "q" $HOME`);
    mkdirSync(binDir);
    bin = path.join(binDir, 'cua-bridge');
    copyFileSync(bridgeBin, bin);
    home = path.join(dir, `home 'it' $(x)`);
    const add = spawnSync(bin, ['space', 'add', markerSpace, 'http://127.0.0.1:9', '--no-verify'], {
      env: { PATH: process.env.PATH, CUA_HOME: home },
      encoding: 'utf8',
    });
    assert.equal(add.status, 0, add.stderr);
    // Where the host runs from, with a HOME of its own: the config alone
    // must lead the bridge to the registry.
    elsewhere = procs.dir('mcpconfig-host');
  });

  after(() => procs.stop());

  for (const client of clients) {
    it(`${client}: the command it names answers the SDK client over stdio`, async () => {
      const out = mcpConfig(bin, home, ['--client', client]);
      assert.equal(out.code, 0, out.stderr);
      const view = hostView(client, out.stdout);
      assert.equal(view.command, bin, 'the config names another binary');
      assert.ok(path.isAbsolute(view.command));
      const transport = new StdioClientTransport({
        command: view.command,
        args: view.args,
        // No CUA_HOME: the host's environment, not the test's.
        env: { PATH: process.env.PATH, HOME: elsewhere, ...view.env },
        cwd: elsewhere,
        stderr: 'pipe',
      });
      const c = new Client(clientInfo, { capabilities: {} });
      await c.connect(transport);
      try {
        assert.ok(c.getServerVersion()?.name, 'initialize answered no server info');
        assert.ok((await listToolsAndSpaces(c)).includes(markerSpace), 'the bridge did not open the registry mcp-config named');
      } finally {
        await c.close();
      }
    });
  }

  describe('over streamable HTTP', () => {
    let listen;
    let token;

    before(async () => {
      const port = await freePort();
      listen = `127.0.0.1:${port}`;
      // serve without --token-file: it writes $CUA_HOME/bridge.token, the
      // file mcp-config reads by default.
      const serve = procs.spawn(bin, ['serve', '--listen', listen], { env: { PATH: process.env.PATH, CUA_HOME: home } });
      const tokenFile = path.join(home, 'bridge.token');
      await eventually(
        async () => {
          if (serve.exitCode !== null) throw new Error(`serve exited: ${serve.output}`);
          await fetch(`http://${listen}/mcp`);
          return existsSync(tokenFile);
        },
        { what: 'cua-bridge serve to listen' },
      );
      token = readFileSync(tokenFile, 'utf8').trim();
    });

    const connect = async (view, headers) => {
      const c = new Client(clientInfo, { capabilities: {} });
      await c.connect(new StreamableHTTPClientTransport(new URL(view.url), { requestInit: { headers } }));
      return c;
    };

    for (const client of clients) {
      it(`${client}: the --http config, resolved as the host does, lists the tools; no token printed`, async () => {
        const out = mcpConfig(bin, home, ['--client', client, '--http', '--listen', listen]);
        assert.ok(!out.stdout.includes(token) && !out.stderr.includes(token), `${client} printed the token without --show-token`);
        if (client === 'claude-desktop') {
          assert.equal(out.code, 2, 'claude-desktop has no HTTP form and must say so');
          assert.match(out.stderr, /stdio/);
          return;
        }
        assert.equal(out.code, 0, out.stderr);
        const view = hostView(client, out.stdout);
        assert.equal(view.url, `http://${listen}/mcp`);
        // What the user does by the note: put the token in the host's
        // environment, or paste it at VS Code's prompt.
        const headers = asHost(client, view, { env: { [tokenEnv]: token }, typed: { 'cua-bridge-token': token } });
        const c = await connect(view, headers);
        try {
          assert.ok((await listToolsAndSpaces(c)).includes(markerSpace));
        } finally {
          await c.close();
        }
      });

      if (client === 'claude-desktop') continue;
      it(`${client}: --http --show-token writes a header that works as it stands`, async () => {
        const out = mcpConfig(bin, home, ['--client', client, '--http', '--listen', listen, '--show-token']);
        assert.equal(out.code, 0, out.stderr);
        assert.ok(!out.stderr.includes(token), 'the note holds the token');
        // Claude Code's line has the shell read the token file as it runs:
        // a line holding the token would stay in the shell's history.
        if (client === 'claude-code') assert.ok(!out.stdout.includes(token), 'the claude mcp add line holds the token');
        const view = hostView(client, out.stdout);
        assert.equal(view.headers.Authorization, `Bearer ${token}`);
        const c = await connect(view, view.headers);
        await c.listTools();
        await c.close();
      });
    }
  });
});
