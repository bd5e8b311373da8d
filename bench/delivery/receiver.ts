/**
 * The benchmark's webhook endpoint, run as a child process (its own event loop, the same one for
 * the baseline and for Herald): a raw node:http server answering 200 to every POST, after
 * `?delay_ms=N` when the URL says so (a slow receiver). It counts requests and, in latency mode,
 * records when each event's delivery arrived (by entity id). Requests to /flow/… are tallied by
 * path (FlowTally): the calls, the events they list and each entity's versions as they arrive.
 *
 * Parent → child messages: {cmd:'mode', latency}, {cmd:'stats'} → {count, bytes, arrivals?},
 * {cmd:'flow', path} → FlowTally, {cmd:'flow-reset', path} → {ok}.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EntityTally, FlowTally } from '../lib/receiver-process.js';

let count = 0;
let lastBytes = 0;
let latency = false;
let arrivals: [string, number][] = [];

/** What one /flow/ path received, its entities by id (summed up as a FlowTally when asked). */
interface PathTally {
  calls: number;
  events: number;
  firstAt: number;
  lastAt: number;
  backwards: number;
  entities: Map<string, EntityTally>;
}

const tallies = new Map<string, PathTally>();

interface Entry {
  entity?: { id?: string; attributes?: { title?: string } };
}

/** The version in a title of bench/delivery/fixtures.ts's itemEvent (` v<n>`), or -1. */
const versionOf = (entry: Entry): number => {
  const match = / v(\d+)$/.exec(entry.entity?.attributes?.title ?? '');
  return match ? Number(match[1]) : -1;
};

function tally(path: string, body: string, at: number): void {
  let payload: Entry & { events?: Entry[] };
  try {
    payload = JSON.parse(body) as Entry & { events?: Entry[] };
  } catch {
    return;
  }
  let t = tallies.get(path);
  if (!t)
    tallies.set(
      path,
      (t = { calls: 0, events: 0, firstAt: at, lastAt: at, backwards: 0, entities: new Map() }),
    );
  t.calls++;
  t.lastAt = at;
  const entries = payload.events ?? [payload];
  t.events += entries.length;
  for (const entry of entries) {
    const id = entry.entity?.id;
    if (!id) continue;
    const version = versionOf(entry);
    let e = t.entities.get(id);
    if (!e) t.entities.set(id, (e = { calls: 0, last: -1, highest: -1 }));
    e.calls++;
    if (version < e.highest) t.backwards++;
    e.last = version;
    e.highest = Math.max(e.highest, version);
  }
}

function summary(path: string, final: number | undefined): FlowTally {
  const t = tallies.get(path);
  let maxCalls = 0;
  let atFinal = 0;
  for (const e of t?.entities.values() ?? []) {
    maxCalls = Math.max(maxCalls, e.calls);
    if (e.last === (final ?? e.highest)) atFinal++;
  }
  return {
    calls: t?.calls ?? 0,
    events: t?.events ?? 0,
    firstAt: t?.firstAt ?? 0,
    lastAt: t?.lastAt ?? 0,
    entities: t?.entities.size ?? 0,
    maxCalls,
    backwards: t?.backwards ?? 0,
    atFinal,
  };
}

const now = () => performance.timeOrigin + performance.now();

const server = createServer((req, res) => {
  let bytes = 0;
  const chunks: Buffer[] = [];
  // Only the flow rows' URLs are parsed: the other rows' receiver does what it always did.
  const url = req.url?.startsWith('/flow/') ? new URL(req.url, 'http://receiver') : undefined;
  const delayMs = Number(url?.searchParams.get('delay_ms') ?? 0);
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (latency || url) chunks.push(chunk);
  });
  req.on('end', () => {
    const at = now();
    count++;
    lastBytes = bytes;
    if (url) tally(url.pathname, Buffer.concat(chunks).toString('utf8'), at);
    if (latency) {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          entity?: { id?: string };
        };
        if (body.entity?.id) arrivals.push([body.entity.id, at]);
      } catch {
        // the baseline's body is not a payload
      }
    }
    const answer = () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;

process.on(
  'message',
  (message: { cmd: string; latency?: boolean; path?: string; final?: number }) => {
    if (message.cmd === 'mode') {
      latency = !!message.latency;
      arrivals = [];
      process.send!({ ok: true });
    } else if (message.cmd === 'stats') {
      process.send!({ count, bytes: lastBytes, arrivals: latency ? arrivals : [] });
    } else if (message.cmd === 'flow') {
      process.send!(summary(message.path!, message.final));
    } else if (message.cmd === 'flow-reset') {
      tallies.delete(message.path!);
      process.send!({ ok: true });
    } else if (message.cmd === 'exit') {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  },
);

server.listen(0, '127.0.0.1', () => {
  process.send!({ port: (server.address() as AddressInfo).port });
});
