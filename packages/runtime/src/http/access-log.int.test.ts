import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { Router } from 'express';
import { describe, expect, vi } from 'vitest';
import { createTestToken, testDeps, testRedisCoordination, type TestDeps } from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import { createLogger } from '../logger.js';
import { requireRole } from './auth.js';
import { createApiApp, createOpsApp } from './create-api-app.js';
import { listen } from './listen.js';

const it = integrationTest();

interface Line {
  level: number;
  msg: string;
  module?: string;
  requestId?: string;
  method?: string;
  route?: string;
  path?: string;
  status?: number;
  durationMs?: number;
  code?: string;
  tokenId?: string;
  tokenName?: string;
  aborted?: boolean;
}

/** A logger at info whose JSON lines the test reads back, raw text included. */
function capturedLogger() {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw.push(chunk.toString('utf8'));
      done();
    },
  });
  const logger = createLogger({ name: 'test', level: 'info', destination: stream });
  const lines = () =>
    raw
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text) as Line);
  const access = () => lines().filter((line) => line.module === 'access');
  return { logger, raw, lines, access };
}

let entered: ((requestId: string) => void) | undefined;

function probeRouter(): Router {
  const router = Router();
  router.get('/hang', requireRole(), (_req, res) => {
    entered?.(String(res.getHeader('x-request-id')));
  });
  router.post('/events', requireRole('producer'), (_req, res) => {
    res.status(202).json({ data: [] });
  });
  router.get('/things/:id', requireRole(), (req, res) => {
    res.json({ data: { id: req.params['id'] } });
  });
  router.get('/boom', requireRole(), () => {
    throw new Error('unexpected');
  });
  return router;
}

/** The API plumbing around probeRouter on a real server, logging into `log`. */
async function served(deps: TestDeps, sampleRates: Record<string, number>) {
  const log = capturedLogger();
  const app = createApiApp(
    { ...deps, logger: log.logger, http: { ...deps.http, accessLog: { sampleRates } } },
    [probeRouter()],
  );
  const { server, url } = await listen(app, {
    port: 0,
    host: '127.0.0.1',
    docsUrl: deps.http.docsUrl,
    logger: log.logger,
  });
  const close = () =>
    new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    });
  return { ...log, url, close };
}

/** Waits for the one access line of a request id and returns it. */
async function lineOf(log: { access: () => Line[] }, requestId: string): Promise<Line> {
  return vi.waitFor(() => {
    const found = log.access().filter((line) => line.requestId === requestId);
    expect(found).toHaveLength(1);
    return found[0]!;
  });
}

let deps: TestDeps;
let admin: string;
let producer: string;
let reader: string;

it.beforeAll(async ({ db, redis }) => {
  deps = testDeps(db, redis);
  admin = await createTestToken(db, 'admin', 'ops-console');
  producer = await createTestToken(db, 'producer', 'cms-hook');
  reader = await createTestToken(db, 'read_only', 'site');
});
it.afterAll(async () => {
  await deps.eventMatchQueue.close();
});

describe('the access log', () => {
  it('writes one JSON line per request with its route, status, duration, request id and token, never the token', async () => {
    const app = await served(deps, {});
    try {
      const call = (path: string, token: string | null, init: RequestInit = {}) =>
        fetch(`${app.url}${path}`, {
          ...init,
          headers: token ? { Authorization: `Bearer ${token}` } : {},
        });
      const ok = await call('/things/t-42?page[limit]=5', admin);
      expect(ok.status).toBe(200);
      const accepted = await call('/events', producer, { method: 'POST' });
      expect(accepted.status).toBe(202);
      const anonymous = await call('/things/t-42', null);
      expect(anonymous.status).toBe(401);
      const forbidden = await call('/events', reader, { method: 'POST' });
      expect(forbidden.status).toBe(403);
      const unknown = await call('/nowhere', admin);
      expect(unknown.status).toBe(404);
      const boom = await call('/boom', admin);
      expect(boom.status).toBe(500);

      const okLine = await lineOf(app, ok.headers.get('x-request-id')!);
      expect(okLine).toMatchObject({
        level: 30,
        msg: 'request',
        method: 'GET',
        route: '/things/:id',
        path: '/things/t-42',
        status: 200,
        tokenName: 'ops-console',
      });
      expect(okLine.tokenId).toMatch(/^\d+$/);
      expect(okLine.durationMs).toBeGreaterThanOrEqual(0);
      expect(okLine).not.toHaveProperty('code');

      expect(await lineOf(app, accepted.headers.get('x-request-id')!)).toMatchObject({
        level: 30,
        method: 'POST',
        route: '/events',
        status: 202,
        tokenName: 'cms-hook',
      });
      // Errors: warn for 4xx, error for 5xx, with the code answered.
      const anonymousLine = await lineOf(app, anonymous.headers.get('x-request-id')!);
      expect(anonymousLine).toMatchObject({
        level: 40,
        route: 'unmatched',
        path: '/things/t-42',
        status: 401,
        code: 'INVALID_AUTHORIZATION_HEADER',
      });
      expect(anonymousLine).not.toHaveProperty('tokenId');
      expect(await lineOf(app, forbidden.headers.get('x-request-id')!)).toMatchObject({
        level: 40,
        route: '/events',
        status: 403,
        code: 'INSUFFICIENT_PERMISSIONS',
        tokenName: 'site',
      });
      expect(await lineOf(app, unknown.headers.get('x-request-id')!)).toMatchObject({
        level: 40,
        route: 'unmatched',
        path: '/nowhere',
        status: 404,
        code: 'INVALID_ENDPOINT',
      });
      const boomId = (
        (await boom.json()) as { data: [{ attributes: { details: { request_id: string } } }] }
      ).data[0].attributes.details.request_id;
      expect(boomId).toBe(boom.headers.get('x-request-id'));
      expect(await lineOf(app, boomId)).toMatchObject({
        level: 50,
        route: '/boom',
        status: 500,
        code: 'INTERNAL_ERROR',
        tokenName: 'ops-console',
      });
      // The unexpected error itself is logged with the same request id (and its stack).
      expect(app.lines().find((line) => line.msg === 'unexpected error')).toMatchObject({
        requestId: boomId,
      });

      expect(app.access()).toHaveLength(6);
      const text = app.raw.join('');
      for (const token of [admin, producer, reader]) expect(text).not.toContain(token);
      expect(text).not.toContain('page[limit]');
    } finally {
      await app.close();
    }
  });

  it('logs a request the client gave up on at warn, as aborted', async () => {
    const app = await served(deps, {});
    try {
      const reached = new Promise<string>((resolve) => (entered = resolve));
      const socket = connect(Number(new URL(app.url).port), '127.0.0.1', () => {
        socket.write(`GET /hang HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\n\r\n`);
      });
      socket.on('error', () => undefined);
      const requestId = await reached;
      socket.destroy();
      expect(await lineOf(app, requestId)).toMatchObject({
        level: 40,
        msg: 'request aborted',
        route: '/hang',
        aborted: true,
        tokenName: 'ops-console',
      });
    } finally {
      entered = undefined;
      await app.close();
    }
  });

  it('gives what the HTTP parser refuses a request id, answered and logged', async () => {
    const app = await served(deps, {});
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(app.url).port), '127.0.0.1', () => {
          socket.write('NOT HTTP AT ALL\r\n\r\n');
        });
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
        socket.on('end', () => resolve(received));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      const requestId = /\r\nX-Request-Id: ([0-9a-f-]{36})\r\n/.exec(answer)?.[1];
      expect(requestId).toBeDefined();
      expect(await lineOf(app, requestId!)).toMatchObject({
        level: 40,
        status: 400,
        code: 'INVALID_REQUEST',
      });
    } finally {
      await app.close();
    }
  });

  it('with a sample rate of 0 drops successful POST /events lines, never error lines', async () => {
    const app = await served(deps, { 'POST /events': 0 });
    try {
      const post = (token: string) =>
        fetch(`${app.url}/events`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}` },
        });
      const accepted = [await post(producer), await post(producer), await post(producer)];
      for (const res of accepted) expect(res.status).toBe(202);
      const forbidden = await post(reader);
      expect(forbidden.status).toBe(403);
      const other = await fetch(`${app.url}/things/x`, {
        headers: { Authorization: `Bearer ${admin}` },
      });
      expect(other.status).toBe(200);

      expect(await lineOf(app, forbidden.headers.get('x-request-id')!)).toMatchObject({
        route: '/events',
        status: 403,
      });
      // Other routes are not sampled. Each line is written when its answer finishes: once the
      // later requests' lines are in, the accepted ones' would be too.
      await lineOf(app, other.headers.get('x-request-id')!);
      expect(app.access().filter((line) => line.status === 202)).toEqual([]);
      expect(app.access()).toHaveLength(2);
    } finally {
      await app.close();
    }
  });

  it('logs the health and metrics probes at debug, and their failures', async ({ db, redis }) => {
    const log = capturedLogger();
    let draining = false;
    const app = createOpsApp({
      db,
      coordination: testRedisCoordination(redis),
      logger: log.logger,
      metrics: deps.metrics,
      lifecycle: {
        get draining() {
          return draining;
        },
      },
      docsUrl: deps.http.docsUrl,
    });
    const { server, url } = await listen(app, {
      port: 0,
      host: '127.0.0.1',
      docsUrl: deps.http.docsUrl,
      logger: log.logger,
    });
    try {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      draining = true;
      const refused = await fetch(`${url}/readyz`);
      expect(refused.status).toBe(503);
      expect(await lineOf(log, refused.headers.get('x-request-id')!)).toMatchObject({
        level: 50,
        route: '/readyz',
        status: 503,
      });
      expect(log.access().filter((line) => line.route === '/healthz')).toEqual([]);
    } finally {
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    }
  });
});
