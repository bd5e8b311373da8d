import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { Router } from 'express';
import { describe, expect } from 'vitest';
import fc from 'fast-check';
import { ApiError, errorId } from '@herald/contract';
import { createPostgresDb, findToken, registerBootstrapToken } from '@herald/store';
import { createTestToken, serve, testDeps, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { requireRole } from './auth.js';
import { context } from './context.js';
import { createApiApp } from './create-api-app.js';

// Routes that exist only to exercise the plumbing around them. Those at the API's paths answer in
// their shape (the test setup checks every answer against the OpenAPI document).
function probeRouter(): Router {
  const router = Router();
  router.get('/items', requireRole('read_only'), (_req, res) => {
    res.json({ data: [], meta: { total_count: 0 } });
  });
  router.post('/events', requireRole('producer'), (_req, res) => {
    res.status(202).json({ data: [] });
  });
  router.get('/admin-only', requireRole(), (_req, res) => {
    res.json({ data: { environment: context(res).environment?.id, query: context(res).query } });
  });
  router.post('/echo', requireRole(), (req, res) => {
    res.json({ data: req.body as unknown });
  });
  router.get('/things/:id', requireRole(), (req, res) => {
    res.json({ data: { id: req.params['id'] } });
  });
  router.get('/boom', requireRole(), () => {
    throw new Error('secret internal detail');
  });
  return router;
}

/** Raw bytes for a path segment; "." and ".." are dot segments that URLs resolve away. */
const idBytes = (maxLength: number) =>
  fc
    .uint8Array({ minLength: 1, maxLength })
    .filter((bytes) => !/^\.{1,2}$/.test(Buffer.from(bytes).toString('latin1')));

/** The plumbing around probeRouter, served; `call` sends the admin token unless told otherwise. */
const it = appTest((deps) => createApiApp(deps, [probeRouter()]), {
  http: { bodyLimitBytes: 64 * 1024 },
})
  .extend(
    'call',
    ({ api }) =>
      (path: string, init: RequestInit & { token?: string | null } = {}) => {
        const headers = new Headers(init.headers);
        const token = init.token === undefined ? api.token : init.token;
        if (token) headers.set('Authorization', `Bearer ${token}`);
        return fetch(`${api.url}${path}`, { ...init, headers });
      },
  )
  .extend(
    'echo',
    ({ call }) =>
      /** POSTs `body` to /echo, as JSON unless `headers` say otherwise. */
      (body: BodyInit, headers: HeadersInit = { 'Content-Type': 'application/json' }) =>
        call('/echo', { method: 'POST', headers, body }),
  );

let reader: string;
let producer: string;

it.beforeAll(async ({ db }) => {
  reader = await createTestToken(db, 'read_only');
  producer = await createTestToken(db, 'producer');
  await db.query(`INSERT INTO environments (id, locales) VALUES ('sandbox', ARRAY['en','it'])`);
});

const json = async (res: Response) => (await res.json()) as { data: any };

/** Asserts status and the envelope of a single error. */
async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const body = await json(res);
  expect(body.data).toHaveLength(1);
  expect(body.data[0]).toMatchObject({
    id: errorId(code),
    type: 'api_error',
    attributes: { code, doc_url: `https://docs.test/errors#${code}` },
  });
  expect(typeof body.data[0].attributes.details).toBe('object');
  return body.data[0].attributes.details as Record<string, unknown>;
}

describe('responses', () => {
  it('carry the standard headers and JSON content type', async ({ call }) => {
    const res = await call('/items', { token: reader });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('x-api-version')).toBe('3');
    expect(res.headers.get('x-environment')).toBe('main');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('x-ratelimit-limit')).toBe('100000');
    expect(Number(res.headers.get('x-ratelimit-remaining'))).toBeLessThan(100000);
  });

  it('echo a given X-Request-Id and replace an unusable one', async ({ call }) => {
    const given = await call('/items', { headers: { 'X-Request-Id': 'req-123' } });
    expect(given.headers.get('x-request-id')).toBe('req-123');
    const bad = await call('/items', { headers: { 'X-Request-Id': 'has spaces and {braces}' } });
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('health, readiness and metrics need no token', async ({ call }) => {
    expect((await call('/healthz', { token: null })).status).toBe(200);
    const ready = await call('/readyz', { token: null });
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { database: 'ok', redis: 'ok' },
    });
    const metrics = await (await call('/metrics', { token: null })).text();
    expect(metrics).toContain(
      'herald_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/items",status="200"}',
    );
  });
});

describe('authentication and roles', () => {
  it('401 INVALID_AUTHORIZATION_HEADER for a missing, malformed or unknown token', async ({
    api,
    call,
  }) => {
    await expectError(await call('/items', { token: null }), 401, 'INVALID_AUTHORIZATION_HEADER');
    await expectError(
      await call('/items', { token: null, headers: { Authorization: `Token ${api.token}` } }),
      401,
      'INVALID_AUTHORIZATION_HEADER',
    );
    await expectError(
      await call('/items', { token: 'hrld_unknown' }),
      401,
      'INVALID_AUTHORIZATION_HEADER',
    );
  });

  it('unauthenticated answers carry no X-RateLimit headers', async ({ call }) => {
    const res = await call('/items', { token: null });
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('admin may do everything', async ({ call }) => {
    expect((await call('/items')).status).toBe(200);
    expect(
      (
        await call('/events', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(202);
    expect((await call('/admin-only')).status).toBe(200);
  });

  it('read_only may list items only', async ({ call }) => {
    expect((await call('/items', { token: reader })).status).toBe(200);
    const details = await expectError(
      await call('/events', {
        token: reader,
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{}',
      }),
      403,
      'INSUFFICIENT_PERMISSIONS',
    );
    expect(details['role']).toBe('read_only');
    await expectError(
      await call('/admin-only', { token: reader }),
      403,
      'INSUFFICIENT_PERMISSIONS',
    );
  });

  it('producer may post events only', async ({ call }) => {
    expect(
      (
        await call('/events', {
          token: producer,
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: '[]',
        })
      ).status,
    ).toBe(202);
    await expectError(await call('/items', { token: producer }), 403, 'INSUFFICIENT_PERMISSIONS');
    await expectError(
      await call('/admin-only', { token: producer }),
      403,
      'INSUFFICIENT_PERMISSIONS',
    );
  });

  it('a revoked token stops working', async ({ db, call }) => {
    const token = await createTestToken(db, 'read_only', 'to-revoke');
    expect((await call('/items', { token })).status).toBe(200);
    await db.query(`UPDATE api_tokens SET revoked_at = now() WHERE name = 'to-revoke'`);
    await expectError(await call('/items', { token }), 401, 'INVALID_AUTHORIZATION_HEADER');
  });

  it('the configured admin token works once registered, beside stored tokens, and is marked used', async ({
    db,
    call,
  }) => {
    const bootstrap = 'bootstrap-admin-token-0123456789';
    await expectError(
      await call('/admin-only', { token: bootstrap }),
      401,
      'INVALID_AUTHORIZATION_HEADER',
    );
    const { record } = await registerBootstrapToken(db, {
      token: bootstrap,
      name: 'HERALD_ADMIN_TOKEN',
    });
    expect(record.lastUsedAt).toBeNull();
    expect((await call('/admin-only', { token: bootstrap })).status).toBe(200);
    expect((await call('/admin-only', { token: `${bootstrap}x` })).status).toBe(401);
    expect((await findToken(db, record.id))?.lastUsedAt).toBeInstanceOf(Date);
  });
});

describe('request headers', () => {
  it.for([
    undefined,
    '*/*',
    'application/json',
    'application/vnd.api+json',
    'text/html, application/json;q=0.5',
  ])('Accept %s is fine', async (accept, { call }) => {
    const res = await call('/items', { headers: accept ? { Accept: accept } : {} });
    expect(res.status).toBe(200);
  });

  it('406 INVALID_ACCEPT_HEADER when Accept excludes JSON', async ({ call }) => {
    await expectError(
      await call('/items', { headers: { Accept: 'text/html' } }),
      406,
      'INVALID_ACCEPT_HEADER',
    );
    await expectError(
      await call('/items', { headers: { Accept: 'application/json;q=0' } }),
      406,
      'INVALID_ACCEPT_HEADER',
    );
  });

  it('415 INVALID_CONTENT_TYPE_HEADER for a body that is not JSON', async ({ echo }) => {
    const res = await echo('hi', { 'Content-Type': 'text/plain' });
    await expectError(res, 415, 'INVALID_CONTENT_TYPE_HEADER');
    const none = await echo(new Uint8Array([123, 125]), {});
    await expectError(none, 415, 'INVALID_CONTENT_TYPE_HEADER');
  });

  it('accepts JSON bodies as application/json with charset and as application/vnd.api+json', async ({
    echo,
  }) => {
    for (const type of ['application/json; charset=utf-8', 'application/vnd.api+json']) {
      const res = await echo('{"a":1}', { 'Content-Type': type });
      expect(res.status).toBe(200);
      expect(await json(res)).toEqual({ data: { a: 1 } });
    }
  });

  it('never answers 500 whatever the values of the headers the plumbing reads', async ({
    echo,
  }) => {
    const printable = fc
      .string({
        unit: fc.constantFrom(...'aZ09 ;,=*/+-._:"\'()<>@?[]{}~!#$%&^`|\u00e9'.split('')),
        maxLength: 16,
      })
      .map((v) => v.trim());
    const header = (...meaningful: string[]) => fc.oneof(printable, fc.constantFrom(...meaningful));
    const headers = fc.record(
      {
        accept: header('*/*', 'application/json', 'text/html', 'application/json;q=0', ';q=x,,'),
        'content-type': header(
          'application/json',
          'application/json; charset=utf-16',
          'application/json; charset=latin1',
          'application/json; charset="',
          'application/vnd.api+json;;',
          'text/plain',
        ),
        'content-encoding': header('gzip', 'deflate', 'br', 'identity', 'zstd', 'gzip, br'),
        'x-api-version': header('3', '2', ''),
        'x-environment': header('main', 'sandbox', 'nope', '../main'),
        'x-request-id': header('req-1', 'a'.repeat(200)),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(
        headers,
        fc.constantFrom('{"a":1}', '{"a":', '[[[]]]', ''),
        async (h, body) => {
          const res = await echo(body, h);
          expect(res.status, JSON.stringify(h)).toBeLessThan(500);
          if (res.status !== 200) {
            const { data } = await json(res);
            expect(data[0].type).toBe('api_error');
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('does not reject a GET that carries a Content-Type (the official clients send one)', async ({
    call,
  }) => {
    const res = await call('/items', { headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(200);
  });

  it('422 INVALID_API_VERSION for an X-Api-Version other than 3', async ({ call }) => {
    expect((await call('/items', { headers: { 'X-Api-Version': '3' } })).status).toBe(200);
    await expectError(
      await call('/items', { headers: { 'X-Api-Version': '2' } }),
      422,
      'INVALID_API_VERSION',
    );
  });

  it('X-Environment selects an environment; unknown → 404 INVALID_ENVIRONMENT', async ({
    call,
  }) => {
    const res = await call('/admin-only', { headers: { 'X-Environment': 'sandbox' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-environment')).toBe('sandbox');
    expect((await json(res)).data.environment).toBe('sandbox');
    await expectError(
      await call('/items', { headers: { 'X-Environment': 'nope' } }),
      404,
      'INVALID_ENVIRONMENT',
    );
    await expectError(
      await call('/items', { headers: { 'X-Environment': '../etc' } }),
      404,
      'INVALID_ENVIRONMENT',
    );
  });
});

describe('bodies', () => {
  it('400 INVALID_JSON_BODY for JSON that does not parse', async ({ echo }) => {
    const res = await echo('{"a":');
    await expectError(res, 400, 'INVALID_JSON_BODY');
  });

  it('413 REQUEST_TOO_LARGE over the body limit', async ({ echo }) => {
    const body = JSON.stringify({ a: 'x'.repeat(70 * 1024) });
    const res = await echo(body);
    await expectError(res, 413, 'REQUEST_TOO_LARGE');
  });

  const nested = (depth: number) => `${'['.repeat(depth - 1)}{"a":1}${']'.repeat(depth - 1)}`;

  it('400 INVALID_JSON_BODY for arrays and objects nested deeper than 128 levels', async ({
    echo,
  }) => {
    expect((await echo(nested(128))).status).toBe(200);
    for (const depth of [129, 8000, 30_000]) {
      const details = await expectError(await echo(nested(depth)), 400, 'INVALID_JSON_BODY');
      expect(details['max_depth']).toBe(128);
    }
    // Deep inside an otherwise ordinary document too, and before the NUL check reads it.
    const deepEntity = `{"data":{"attributes":{"name":"a\\u0000","entity":${nested(5000)}}}}`;
    await expectError(await echo(deepEntity), 400, 'INVALID_JSON_BODY');
  });

  it('400 INVALID_REQUEST for a body that does not decompress as its Content-Encoding says', async ({
    echo,
  }) => {
    const body = '{"a":1}';
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await echo(body, {
        'Content-Type': 'application/json',
        'Content-Encoding': encoding,
      });
      const details = await expectError(res, 400, 'INVALID_REQUEST');
      expect(details['message']).toMatch(/does not decompress/);
    }
    const truncated = gzipSync(body).subarray(0, 12);
    const res = await echo(truncated, {
      'Content-Type': 'application/json',
      'Content-Encoding': 'gzip',
    });
    await expectError(res, 400, 'INVALID_REQUEST');
    // What does decompress is read as usual.
    for (const [encoding, bytes] of [
      ['gzip', gzipSync(body)],
      ['deflate', deflateSync(body)],
      ['br', brotliCompressSync(body)],
    ] as const) {
      const ok = await echo(bytes, {
        'Content-Type': 'application/json',
        'Content-Encoding': encoding,
      });
      expect(ok.status).toBe(200);
      expect(await json(ok)).toEqual({ data: { a: 1 } });
    }
  });

  it('never answers 500 whatever the nesting of a JSON body', async ({ echo }) => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue({ maxDepth: 4 }),
        fc.array(fc.constantFrom('[', '{"k":', '{"data":', '{"__proto__":', '{"toString":'), {
          minLength: 0,
          maxLength: 40,
        }),
        fc.integer({ min: 0, max: 20_000 }),
        async (leaf, wrappers, extra) => {
          const opens = [...wrappers, ...Array<string>(extra % 3 === 0 ? extra : 0).fill('[')];
          const closes = opens.map((open) => (open === '[' ? ']' : '}')).reverse();
          const body = `${opens.join('')}${JSON.stringify(leaf)}${closes.join('')}`;
          const res = await echo(body);
          expect([200, 400, 422]).toContain(res.status);
          if (res.status === 400) await expectError(res, 400, 'INVALID_JSON_BODY');
        },
      ),
      { numRuns: 100 },
    );
  });

  it('422 for a lone surrogate in a string or a key of the body, naming where', async ({
    echo,
  }) => {
    const cases: [string, string][] = [
      ['{"data":{"attributes":{"name":"a\\ud800b"}}}', 'name'],
      ['{"data":{"attributes":{"headers":{"X-\\udfff":"v"}}}}', 'headers.X-\udfff'],
      ['{"events":[{"entity":{"title":"\\ude00\\ud83d"}}]}', 'events.0.entity.title'],
    ];
    for (const [body, field] of cases) {
      const details = await expectError(await echo(body), 422, 'INVALID_FIELD');
      expect(details).toMatchObject({ field, code: 'VALIDATION_FORMAT' });
      expect(details['message']).toMatch(/lone surrogate/);
    }
    // A surrogate pair is one character (😀).
    const ok = await echo('{"name":"a\\ud83d\\ude00b"}');
    expect(ok.status).toBe(200);
    expect(await json(ok)).toEqual({ data: { name: 'a😀b' } });
  });

  it('422 for a NUL character anywhere in the body, naming where', async ({ echo }) => {
    const res = await echo(JSON.stringify({ data: { attributes: { name: 'a\u0000b' } } }));
    const details = await expectError(res, 422, 'INVALID_FIELD');
    expect(details).toMatchObject({ field: 'name', code: 'VALIDATION_FORMAT' });
  });
});

describe('query strings', () => {
  it('parses Rack-style brackets, encoded or not', async ({ call }) => {
    const res = await call(
      '/admin-only?filter[fields][title][eq]=x&filter%5Bids%5D=a,b&list[]=1&list[]=2',
    );
    expect((await json(res)).data.query).toEqual({
      filter: { fields: { title: { eq: 'x' } }, ids: 'a,b' },
      list: ['1', '2'],
    });
  });

  it('422 INVALID_PARAMS over 1,000 parameters', async ({ call }) => {
    const many = Array.from({ length: 1001 }, (_, i) => `p${i}=1`).join('&');
    await expectError(await call(`/admin-only?${many}`), 422, 'INVALID_PARAMS');
    const ok = Array.from({ length: 1000 }, (_, i) => `p${i}=1`).join('&');
    expect((await call(`/admin-only?${ok}`)).status).toBe(200);
  });

  it('422 INVALID_PARAMS for nesting deeper than 5', async ({ call }) => {
    expect((await call('/admin-only?a[b][c][d][e][f]=1')).status).toBe(200);
    await expectError(await call('/admin-only?a[b][c][d][e][f][g]=1'), 422, 'INVALID_PARAMS');
  });

  it('422 INVALID_PARAMS for a NUL character', async ({ call }) => {
    const details = await expectError(
      await call('/admin-only?filter[query]=a%00b'),
      422,
      'INVALID_PARAMS',
    );
    expect(details['param']).toBe('filter.query');
  });

  it('never answers 500 whatever the query string', async ({ call }) => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 200 }), async (raw) => {
        const res = await call(`/admin-only?${encodeURI(raw).replace(/#/g, '%23')}`);
        expect([200, 422]).toContain(res.status);
      }),
      { numRuns: 100 },
    );
  });
});

describe('routing and errors', () => {
  it('404 INVALID_ENDPOINT for unknown paths and methods', async ({ call }) => {
    await expectError(await call('/nowhere'), 404, 'INVALID_ENDPOINT');
    await expectError(await call('/items', { method: 'DELETE' }), 404, 'INVALID_ENDPOINT');
  });

  it('400 INVALID_REQUEST for a path parameter whose percent-encoding is not UTF-8', async ({
    call,
  }) => {
    // A lone continuation byte, an overlong "/", an overlong NUL, a UTF-16 surrogate, 5-byte form.
    for (const id of ['%FF', 'a%C0%AFb', '%C0%80', '%ED%A0%80', '%F8%88%80%80%80', '%E2%82']) {
      const details = await expectError(await call(`/things/${id}`), 400, 'INVALID_REQUEST');
      expect(details['message']).toMatch(/percent-encoding/);
    }
    const ok = await call('/things/%41%C3%A9');
    expect(ok.status).toBe(200);
    expect((await json(ok)).data.id).toBe('Aé');
  });

  it('never answers 500 whatever the bytes of a path parameter', async ({ call }) => {
    await fc.assert(
      fc.asyncProperty(idBytes(12), async (bytes) => {
        const encoded = [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
        const res = await call(`/things/${encoded}`);
        expect([200, 400]).toContain(res.status);
        if (res.status === 400) await expectError(res, 400, 'INVALID_REQUEST');
      }),
      { numRuns: 200 },
    );
  });

  it('500 INTERNAL_ERROR without a stack trace or the message', async ({ call }) => {
    const res = await call('/boom');
    const details = await expectError(res, 500, 'INTERNAL_ERROR');
    expect(JSON.stringify(details)).not.toContain('secret internal detail');
    expect(details['request_id']).toBe(res.headers.get('x-request-id'));
  });

  it('several field errors are answered together', async ({ api, db, redis }) => {
    const router = Router();
    router.post('/many', () => {
      throw ApiError.many([
        ApiError.field('name', 'VALIDATION_REQUIRED', 'is required'),
        ApiError.field(
          'events.1.event_types.0',
          'VALIDATION_INCLUSION',
          'is not a valid event type',
        ),
      ]);
    });
    const other = await serve(createApiApp(testDeps(db, redis), [router]));
    try {
      const res = await fetch(`${other.url}/many`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${api.token}` },
      });
      expect(res.status).toBe(422);
      const body = await json(res);
      expect(body.data.map((e: any) => e.attributes.details.field)).toEqual([
        'name',
        'events.1.event_types.0',
      ]);
    } finally {
      await other.close();
    }
  });

  /** Sends raw bytes and returns the raw response. */
  const raw = (api: TestApi, request: string) =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(api.url);
      const socket = connect(Number(url.port), url.hostname);
      let out = '';
      socket.on('data', (chunk) => (out += chunk.toString()));
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
      socket.write(request);
    });

  it('431 REQUEST_TOO_LARGE in the envelope for headers over 16 KB', async ({ api }) => {
    const res = await raw(
      api,
      `GET /items HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
    );
    expect(res).toMatch(/^HTTP\/1.1 431/);
    expect(res).toContain('application/json; charset=utf-8');
    expect(res).toContain('"code":"REQUEST_TOO_LARGE"');
  });

  it('400 INVALID_REQUEST in the envelope for a malformed request', async ({ api }) => {
    const res = await raw(api, 'GARBAGE\r\n\r\n');
    expect(res).toMatch(/^HTTP\/1.1 400/);
    expect(res).toContain('"code":"INVALID_REQUEST"');
  });

  it('503 SERVICE_UNAVAILABLE, transient, when Postgres cannot be reached', async ({
    api,
    redis,
  }) => {
    const down = createPostgresDb({ connectionString: 'postgres://postgres@127.0.0.1:1/test' });
    const other = await serve(createApiApp(testDeps(down, redis), [probeRouter()]));
    try {
      const res = await fetch(`${other.url}/items`, {
        headers: { Authorization: `Bearer ${api.token}` },
      });
      await expectError(res, 503, 'SERVICE_UNAVAILABLE');
      const ready = await fetch(`${other.url}/readyz`);
      expect(ready.status).toBe(503);
    } finally {
      await other.close();
      await down.close();
    }
  });
});

describe('rate limits', () => {
  it('429 RATE_LIMIT_EXCEEDED with X-RateLimit-Reset past the limit, per token', async ({
    api,
    db,
    redis,
  }) => {
    const limited = await serve(
      createApiApp(
        testDeps(db, redis, {
          rateLimits: {
            windowMs: 3000,
            perRole: { admin: 3, read_only: 3, producer: 3 },
            anonymous: 2,
          },
        }),
        [probeRouter()],
      ),
    );
    try {
      const get = (token: string | null) =>
        fetch(`${limited.url}/items`, {
          headers: token ? { Authorization: `Bearer ${token}` } : {},
        });
      const remaining: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await get(reader);
        expect(res.status).toBe(200);
        remaining.push(res.headers.get('x-ratelimit-remaining')!);
      }
      expect(remaining).toEqual(['2', '1', '0']);
      const over = await get(reader);
      await expectError(over, 429, 'RATE_LIMIT_EXCEEDED');
      const reset = Number(over.headers.get('x-ratelimit-reset'));
      expect(Number.isInteger(reset) && reset >= 1 && reset <= 3).toBe(true);
      expect(over.headers.get('x-ratelimit-limit')).toBe('3');
      // another token has its own budget
      expect((await get(api.token)).status).toBe(200);
      // without a valid token: limited per client address, without X-RateLimit headers
      await expectError(await get(null), 401, 'INVALID_AUTHORIZATION_HEADER');
      await expectError(await get(null), 401, 'INVALID_AUTHORIZATION_HEADER');
      const anonymous = await get(null);
      await expectError(anonymous, 429, 'RATE_LIMIT_EXCEEDED');
      expect(anonymous.headers.get('x-ratelimit-limit')).toBeNull();
    } finally {
      await limited.close();
    }
  });

  it('lets requests through when Redis is unreachable', async ({ api, db }) => {
    const { createRedis } = await import('../redis.js');
    const { silentLogger } = await import('@herald/testkit');
    const deadRedis = createRedis('redis://127.0.0.1:1', 'producer', silentLogger(), {
      retryStrategy: () => null,
    });
    const other = await serve(createApiApp(testDeps(db, deadRedis), [probeRouter()]));
    try {
      const res = await fetch(`${other.url}/items`, {
        headers: { Authorization: `Bearer ${api.token}` },
      });
      expect(res.status).toBe(200);
    } finally {
      await other.close();
      deadRedis.disconnect();
    }
  });
});
