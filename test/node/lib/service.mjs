// An MCP server a Space declares (cua-spacesd --mcp-config), built with the
// official TypeScript SDK (pinned in package.json) over stdio. The tests
// reach it through the bridge's list_tools and call_tool and check that
// each result crosses the daemon and the bridge unchanged.
//
// Run as a program it serves; imported, it gives the tests the results its
// tools answer. MARK_DIR is where it leaves marks: "started" when slow
// starts, "cancelled" when slow's call is cancelled.

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// What the tools answer, as the tests expect to receive them.
export const results = {
  text: {
    content: [{ type: 'text', text: 'héllo <b>&</b> "world"\n\u2028tab\t✓' }],
    structuredContent: { big: 9007199254740991, nested: { z: [1, 2.5, 'x'] } },
  },
  image: {
    content: [
      // A 1x1 PNG, and a caption after it.
      {
        type: 'image',
        mimeType: 'image/png',
        data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      },
      { type: 'text', text: 'one red pixel' },
    ],
  },
  fail: {
    isError: true,
    content: [{ type: 'text', text: 'it failed on purpose' }],
    structuredContent: { reason: 'on purpose' },
  },
};

const tools = [
  { name: 'text', description: 'Answers a text part and structured content.', inputSchema: { type: 'object' } },
  { name: 'image', description: 'Answers an image part.', inputSchema: { type: 'object' } },
  { name: 'fail', description: 'Fails as a tool does (isError).', inputSchema: { type: 'object' } },
  { name: 'pid', description: 'Answers its process id.', inputSchema: { type: 'object' } },
  {
    name: 'slow',
    description: 'Reports progress every 50 ms for steps steps, or until cancelled.',
    inputSchema: { type: 'object', properties: { steps: { type: 'integer' } } },
  },
];

function mark(name) {
  if (process.env.MARK_DIR) writeFileSync(path.join(process.env.MARK_DIR, name), String(process.pid));
}

async function serve() {
  const { Server } = await import('@modelcontextprotocol/sdk/server/index.js');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const { CallToolRequestSchema, ListToolsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const server = new Server({ name: 'node-service', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const name = req.params.name;
    if (results[name]) return results[name];
    if (name === 'pid') return { content: [{ type: 'text', text: String(process.pid) }] };
    if (name === 'slow') {
      mark('started');
      const steps = req.params.arguments?.steps ?? 1;
      const token = req.params._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        const cancelled = await new Promise((resolve) => {
          const t = setTimeout(() => resolve(false), 50);
          extra.signal.addEventListener('abort', () => {
            clearTimeout(t);
            resolve(true);
          }, { once: true });
        });
        if (cancelled || extra.signal.aborted) {
          mark('cancelled');
          throw new Error('cancelled');
        }
        if (token !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
        }
      }
      return { content: [{ type: 'text', text: `${steps} steps` }] };
    }
    throw new Error(`no tool ${name}`);
  });
  process.stderr.write('node-service: serving on stdio\n');
  await server.connect(new StdioServerTransport());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await serve();
}
