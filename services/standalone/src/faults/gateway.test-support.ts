import { request as httpRequest, createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * The many-process configuration's gateway: infra/gateway/nginx.conf's routing, in the test
 * process (nginx is not on the test machines). `/items` and `/items/...` go to the read
 * processes, everything else to ingest; each request to the next upstream in turn. An upstream
 * whose `/readyz` answers other than 200 or refuses connections is left out until it answers 200,
 * as a load balancer's health check does (probed every PROBE_MS; a probe unanswered in time
 * changes nothing); while none of a group is ready, all are tried. A request
 * whose connection is refused goes to the next upstream (nginx's `proxy_next_upstream error`,
 * 2 tries); one cut after it was sent is not sent again (a POST may have been taken) and is
 * answered 503, as nginx's error page for a failed upstream is. No keep-alive to the upstreams:
 * a connection per request, so that none is reused as its server closes it.
 */

/** How often each upstream's /readyz is probed: within SHUTDOWN_READINESS_DELAY_MS (1 s). */
const PROBE_MS = 500;
/**
 * On the gateway's own 503: the upstream connection's error (ECONNREFUSED, ECONNRESET...), for
 * the load to tell a request cut on its way from one Herald refused.
 */
export const GATEWAY_ERROR_HEADER = 'x-faults-gateway-error';

/** Upstreams a request is offered to at most (nginx.conf's proxy_next_upstream_tries). */
const TRIES = 2;

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
]);

interface Upstream {
  port: number;
  ready: boolean;
}

/** An nginx-like envelope of the gateway's own 503 (nginx.conf's @service_unavailable). */
const UNAVAILABLE = JSON.stringify({
  data: [
    {
      id: '805920',
      type: 'api_error',
      attributes: {
        code: 'SERVICE_UNAVAILABLE',
        details: { message: 'The service behind the gateway is unreachable; retry shortly' },
        doc_url: '/docs/errors#SERVICE_UNAVAILABLE',
        transient: true,
      },
    },
  ],
});

export class Gateway {
  readonly #groups: Record<'ingest' | 'read', Upstream[]>;
  readonly #next = { ingest: 0, read: 0 };
  readonly #sockets = new Set<Socket>();
  #probing: NodeJS.Timeout | undefined;
  /** Requests answered 503 by the gateway itself (every upstream of the group failed). */
  unavailable = 0;

  private constructor(
    private readonly server: Server,
    ports: { ingest: readonly number[]; read: readonly number[] },
  ) {
    this.#groups = {
      ingest: ports.ingest.map((port) => ({ port, ready: true })),
      read: ports.read.map((port) => ({ port, ready: true })),
    };
  }

  static async start(ports: {
    ingest: readonly number[];
    read: readonly number[];
  }): Promise<Gateway> {
    const server = createServer();
    const gateway = new Gateway(server, ports);
    server.on('connection', (socket: Socket) => {
      gateway.#sockets.add(socket);
      socket.once('close', () => gateway.#sockets.delete(socket));
    });
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        void gateway.#forward(req, Buffer.concat(chunks)).then(
          (answer) => {
            res.writeHead(answer.status, answer.headers);
            res.end(answer.body);
          },
          (error: NodeJS.ErrnoException) => {
            gateway.unavailable++;
            res.writeHead(503, {
              'content-type': 'application/json',
              'retry-after': '5',
              // For the suite's load only (nginx says nothing): what the upstream connection did.
              [GATEWAY_ERROR_HEADER]: error.code ?? error.message,
            });
            res.end(UNAVAILABLE);
          },
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    gateway.#probing = setInterval(() => gateway.#probe(), PROBE_MS);
    return gateway;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  #probe(): void {
    for (const upstream of [...this.#groups.ingest, ...this.#groups.read]) {
      const probe = httpRequest(
        { host: '127.0.0.1', port: upstream.port, path: '/readyz', agent: false, timeout: 1000 },
        (response) => {
          upstream.ready = response.statusCode === 200;
          response.resume();
        },
      );
      probe.on('timeout', () => probe.destroy(new Error('timeout')));
      // A probe unanswered in time says nothing: on a busy machine most of a live process's
      // may be (the suite's faults never hang a process; one that is gone refuses connections).
      probe.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ECONNREFUSED') upstream.ready = false;
      });
      probe.end();
    }
  }

  /** The upstreams to offer a request of this path to, in order. */
  #pick(path: string): Upstream[] {
    const group = path === '/items' || path.startsWith('/items/') || path.startsWith('/items?');
    const name = group ? 'read' : 'ingest';
    const all = this.#groups[name];
    const ready = all.filter((upstream) => upstream.ready);
    const candidates = ready.length > 0 ? ready : all;
    const start = this.#next[name]++ % candidates.length;
    return [...candidates.slice(start), ...candidates.slice(0, start)].slice(0, TRIES);
  }

  async #forward(
    req: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    headers['x-forwarded-for'] = req.socket.remoteAddress ?? '';
    headers['content-length'] = String(body.length);
    let lastError: unknown;
    for (const upstream of this.#pick(req.url ?? '/')) {
      try {
        return await send(upstream.port, req.method ?? 'GET', req.url ?? '/', headers, body);
      } catch (error) {
        lastError = error;
        // Refused: nothing was sent, the next upstream may take it. Anything else: it may have
        // been taken (a POST is not sent twice).
        if ((error as NodeJS.ErrnoException).code !== 'ECONNREFUSED') break;
        upstream.ready = false;
      }
    }
    throw lastError;
  }

  async close(): Promise<void> {
    clearInterval(this.#probing);
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string | string[]>,
  body: Buffer,
): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const upstream = httpRequest(
      { host: '127.0.0.1', port, method, path, headers, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const out: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(response.headers)) {
            if (value !== undefined && !HOP_BY_HOP.has(name) && name !== 'content-length') {
              out[name] = value;
            }
          }
          resolve({
            status: response.statusCode ?? 502,
            headers: out,
            body: Buffer.concat(chunks),
          });
        });
      },
    );
    upstream.on('error', reject);
    upstream.end(body);
  });
}
