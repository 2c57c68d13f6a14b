// Drives the published computer-server client, @trycua/computer (pinned in
// package-lock.json), for spacesd/compatsvc/npmclient_test.go: the Go test
// starts a real cua-spacesd, sends one request per line on stdin, and
// checks on the display and the disk what each call did.
//
// Requests: {"id", "op": "connect", "host", "key", "name"} makes the
// published Computer reach host (with the key: wss:// with X-API-Key and
// the authenticate message, as it does for the cloud; without: ws://).
// {"id", "op": "call", "method", "args", "digest"?} calls a method of its
// interface; Buffers travel as {"$b64": base64}, or as their sha256 and
// length when digest is set. {"op": "wrong_key", ...} connects a second
// interface with a wrong key. {"op": "cmd", "key", "body"} posts to /cmd.
// Answers are one line each, prefixed by MARK (pino writes its own lines
// to stdout too): {"id", "result"} or {"id", "error"}.

import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';

import { Computer, OSType } from '@trycua/computer';

const MARK = '@@cua-driver ';

// SpaceComputer is the published Computer reaching a Space at host:port
// instead of its cloud name: the only thing it overrides is where to go.
class SpaceComputer extends Computer {
  constructor(host, key, name) {
    super({ name, osType: OSType.LINUX, apiKey: key });
    this.spaceHost = host;
  }

  get ip() {
    return this.spaceHost;
  }
}

let computer;

function decodeArg(a) {
  if (a && typeof a === 'object' && typeof a.$b64 === 'string') {
    return Buffer.from(a.$b64, 'base64');
  }
  return a;
}

function encodeResult(r, digest) {
  if (Buffer.isBuffer(r)) {
    if (digest) {
      return { sha256: createHash('sha256').update(r).digest('hex'), length: r.length };
    }
    return { $b64: r.toString('base64') };
  }
  return r === undefined ? null : r;
}

async function handle(req) {
  switch (req.op) {
    case 'connect': {
      computer = new SpaceComputer(req.host, req.key, req.name);
      await computer.run();
      return 'connected';
    }
    case 'call': {
      const fn = computer.interface[req.method];
      if (typeof fn !== 'function') {
        throw new Error(`the client has no method ${req.method}`);
      }
      const r = await fn.apply(computer.interface, (req.args ?? []).map(decodeArg));
      return encodeResult(r, req.digest);
    }
    case 'send': {
      // The client's own sendCommand, for a command it has no method for.
      return await computer.interface.sendCommand(req.command, req.params ?? {});
    }
    case 'wrong_key': {
      // The client's own interface class, given a key that is not the token.
      const Iface = Object.getPrototypeOf(computer.interface).constructor;
      const iface = new Iface(req.host, 'lume', 'lume', req.key, req.name);
      try {
        await iface.connect();
      } finally {
        iface.disconnect();
      }
      return 'connected';
    }
    case 'cmd': {
      const resp = await fetch(`https://${req.host}/cmd`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': req.key, 'X-Container-Name': req.name },
        body: JSON.stringify(req.body),
      });
      return { status: resp.status, body: await resp.text() };
    }
    case 'close': {
      await computer.disconnect();
      return 'closed';
    }
  }
  throw new Error(`unknown op ${req.op}`);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const req = JSON.parse(line);
  let answer;
  try {
    answer = { id: req.id, result: await handle(req) };
  } catch (err) {
    answer = { id: req.id, error: String(err?.message ?? err) };
  }
  process.stdout.write(MARK + JSON.stringify(answer) + '\n');
  if (req.op === 'close') {
    break;
  }
}
process.exit(0);
