/**
 * The benchmark's webhook endpoint, run as a child process (its own event loop, the same one for
 * the baseline and for Herald): a raw node:http server answering 200 to every POST. It counts
 * requests and, in latency mode, records when each event's delivery arrived (by entity id).
 *
 * Parent → child messages: {cmd:'mode', latency}, {cmd:'stats'} → {count, bytes, arrivals?}.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let count = 0;
let lastBytes = 0;
let latency = false;
let arrivals: [string, number][] = [];

const now = () => performance.timeOrigin + performance.now();

const server = createServer((req, res) => {
  let bytes = 0;
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (latency) chunks.push(chunk);
  });
  req.on('end', () => {
    const at = now();
    count++;
    lastBytes = bytes;
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
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;

process.on('message', (message: { cmd: string; latency?: boolean }) => {
  if (message.cmd === 'mode') {
    latency = !!message.latency;
    arrivals = [];
    process.send!({ ok: true });
  } else if (message.cmd === 'stats') {
    process.send!({ count, bytes: lastBytes, arrivals: latency ? arrivals : [] });
  } else if (message.cmd === 'exit') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});

server.listen(0, '127.0.0.1', () => {
  process.send!({ port: (server.address() as AddressInfo).port });
});
