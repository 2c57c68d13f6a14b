// The generic server scenarios of the official conformance suite
// (@modelcontextprotocol/conformance, pinned in package.json) against
// `cua-bridge serve` and against cua-spacesd's own /mcp, which share their
// MCP server (mcp/mcpserve) and must both pass.
//
// The suite's client sends no Authorization header, and both check a
// bearer on every request, so the suite talks to a loopback proxy that adds
// the token and passes everything else through (see authProxy: a rebinding
// Host or Origin reaches the server unchanged).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';

import { Procs, authProxy, startBridgeHTTP, startSpacesd } from './lib/harness.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const conformanceBin = path.join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

// The generic scenarios issue 3 asks for; the others need test tools
// (test_simple_text, prompts, resources) a real server does not have.
export const scenarios = [
  'server-initialize',
  'ping',
  'tools-list',
  'logging-set-level',
  'dns-rebinding-protection',
  'server-sse-multiple-streams',
];

// One scenario is a handful of requests; this bounds a hung server only.
const scenarioTimeoutMs = 120_000;

// The servers the scenarios run against, each started (with its proxy) by start.
const targets = [
  { name: 'cua-bridge serve', start: (procs) => startBridgeHTTP(procs) },
  { name: "cua-spacesd's /mcp", start: (procs) => startSpacesd(procs) },
];

for (const target of targets) {
  describe(`conformance 0.1.13 server scenarios against ${target.name}`, { timeout: 600_000 }, () => {
    const procs = new Procs();
    let url;

    before(async () => {
      url = await authProxy(procs, await target.start(procs));
    });
    after(() => procs.stop());

    for (const scenario of scenarios) {
      it(scenario, async () => {
        const out = procs.dir(`conformance-${scenario}`);
        let stdout = '';
        let code = 0;
        try {
          ({ stdout } = await run(process.execPath, [conformanceBin, 'server', '--url', url, '--scenario', scenario, '-o', out], {
            timeout: scenarioTimeoutMs,
            maxBuffer: 16 << 20,
          }));
        } catch (err) {
          stdout = `${err.stdout}\n${err.stderr}`;
          code = err.code ?? 1;
        }
        // The suite writes its checks to <out>/server-<scenario>-<time>/checks.json.
        const dirs = readdirSync(out).filter((d) => d.startsWith(`server-${scenario}`));
        assert.equal(dirs.length, 1, `no result directory for ${scenario}:\n${stdout}`);
        const checks = JSON.parse(readFileSync(path.join(out, dirs[0], 'checks.json'), 'utf8'));
        const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
        assert.deepEqual(
          bad.map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? ''} ${JSON.stringify(c.details ?? {})}`),
          [],
          `conformance ${scenario} failed:\n${stdout}`,
        );
        assert.ok(checks.some((c) => c.status === 'SUCCESS'), `no successful check in ${scenario}:\n${stdout}`);
        assert.equal(code, 0, `conformance exited ${code}:\n${stdout}`);
      });
    }
  });
}
