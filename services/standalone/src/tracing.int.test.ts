import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fieldEntity,
  modelEvent,
  spawnHerald,
  startReceiver,
  type Receiver,
} from '@herald/testkit';

// OpenTelemetry traces (docs/operations.md, Traces): the real single process, exporting by
// OTLP/HTTP (JSON) to a local collector, delivering to a local receiver. One trace goes from the
// producer's traceparent on POST /events to the traceparent the receiver gets.

const dist = fileURLToPath(new URL('../dist/', import.meta.url));

/** An OTLP/JSON span, as the collector below receives it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** A local OTLP/HTTP collector: POST /v1/traces, the JSON protocol. */
async function startCollector(): Promise<{
  url: string;
  spans: OtlpSpan[];
  bodies: string[];
  close: () => Promise<void>;
}> {
  const spans: OtlpSpan[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      bodies.push(body);
      const parsed = JSON.parse(body) as {
        resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[];
      };
      for (const resource of parsed.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []));
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A span's attributes as plain values. */
function attributesOf(span: OtlpSpan): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of span.attributes ?? []) {
    const v =
      value['stringValue'] ?? value['intValue'] ?? value['boolValue'] ?? value['arrayValue'];
    out[key] = typeof v === 'string' && 'intValue' in value ? Number(v) : v;
  }
  return out;
}

const dirs: string[] = [];
const children: ChildProcess[] = [];

/** Starts the real single process on an embedded PostgreSQL (Postgres alone) with `env`. */
async function startHerald(env: Record<string, string>): Promise<{ url: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'herald-trace-'));
  dirs.push(dataDir);
  const herald = spawnHerald(join(dist, 'main.js'), {
    HERALD_DATA_DIR: dataDir,
    HERALD_ADMIN_TOKEN: ADMIN_TOKEN,
    SSRF_ALLOW_CIDRS: '127.0.0.0/8',
    ...env,
  });
  children.push(herald.child);
  return { url: await herald.url() };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const ADMIN_TOKEN = `test-admin-${randomBytes(16).toString('hex')}`;
/** A value in the item's attributes: no span may carry it. */
const PAYLOAD_MARKER = `payload-marker-${randomBytes(6).toString('hex')}`;

/** Calls Herald's API as the admin. */
async function call(
  url: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${ADMIN_TOKEN}`,
      'Content-Type': 'application/json',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Creates a webhook of every item create, to `receiverUrl`; returns its id. */
async function createWebhook(
  url: string,
  name: string,
  receiverUrl: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; secret: string }> {
  const created = await call(url, 'POST', '/webhooks', {
    data: {
      type: 'webhook',
      attributes: {
        name,
        url: receiverUrl,
        headers: {},
        events: [{ entity_type: 'item', event_types: ['create'], filter: null }],
        custom_payload: null,
        http_basic_user: null,
        http_basic_password: null,
        ...extra,
      },
    },
  });
  expect(created.status).toBe(201);
  const data = created.body['data'] as { id: string; attributes: Record<string, unknown> };
  return { id: data.id, secret: String(data.attributes['signing_secret']) };
}

/** Stores the model `post` (one string field, `title`). */
async function createModel(url: string): Promise<void> {
  const model = await call(url, 'POST', '/events', {
    data: modelEvent('post', {}, [fieldEntity('title', 'string', { id: 'title' })]),
  });
  expect(model.status).toBe(202);
}

/** Posts one item create (a record of `post`), with the producer's `headers`. */
async function postItem(url: string, headers: Record<string, string>): Promise<void> {
  const posted = await call(
    url,
    'POST',
    '/events',
    {
      data: {
        type: 'event',
        attributes: {
          entity_type: 'item',
          event_type: 'create',
          entity: {
            type: 'item',
            id: `rec-${randomBytes(4).toString('hex')}`,
            attributes: { title: PAYLOAD_MARKER },
            relationships: { item_type: { data: { type: 'item_type', id: 'post' } } },
            meta: {},
          },
        },
      },
    },
    headers,
  );
  expect(posted.status).toBe(202);
}

afterAll(async () => {
  for (const child of children) await stop(child);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('OpenTelemetry traces', { timeout: 180_000 }, () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let traced: Receiver;
  let optedOut: Receiver;
  beforeAll(async () => {
    collector = await startCollector();
    traced = await startReceiver();
    optedOut = await startReceiver();
  });
  afterAll(async () => {
    await traced.close();
    await optedOut.close();
    await collector.close();
  });

  it("continues the producer's trace through the match and each attempt to the receiver's traceparent", async () => {
    const { url } = await startHerald({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    const hook = await createWebhook(url, 'traced', traced.url);
    const quiet = await createWebhook(url, 'opted out', optedOut.url, { trace_context: false });
    await createModel(url);

    const traceId = randomBytes(16).toString('hex');
    const producerSpanId = randomBytes(8).toString('hex');
    await postItem(url, { traceparent: `00-${traceId}-${producerSpanId}-01` });

    await expect.poll(() => traced.requests.length, { timeout: 30_000 }).toBe(1);
    await expect.poll(() => optedOut.requests.length, { timeout: 30_000 }).toBe(1);
    // The receiver's traceparent: the producer's trace, the attempt's span.
    const sent = String(traced.requests[0]!.headers['traceparent']);
    expect(sent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    const attemptSpanId = sent.split('-')[2]!;
    expect(attemptSpanId).not.toBe(producerSpanId);
    // The webhook that opted out gets none.
    expect(optedOut.requests[0]!.headers['traceparent']).toBeUndefined();

    // The collector has the trace: POST /events (child of the producer's span), the match and
    // both attempts (children of POST /events), the traced attempt being the receiver's parent.
    const ofTrace = () => collector.spans.filter((span) => span.traceId === traceId);
    await expect
      .poll(
        () =>
          ofTrace()
            .map((span) => span.name)
            .sort(),
        { timeout: 30_000 },
      )
      .toEqual(['POST /events', 'herald.attempt', 'herald.attempt', 'herald.match']);
    const spans = ofTrace();
    const ingest = spans.find((span) => span.name === 'POST /events')!;
    expect(ingest.parentSpanId).toBe(producerSpanId);
    expect(attributesOf(ingest)).toMatchObject({
      'http.response.status_code': 202,
      'herald.event.count': 1,
    });
    const match = spans.find((span) => span.name === 'herald.match')!;
    expect(match.parentSpanId).toBe(ingest.spanId);
    expect(attributesOf(match)).toMatchObject({
      'herald.event.type': 'item.create',
      'herald.match.webhooks': 2,
    });
    const attempts = spans.filter((span) => span.name === 'herald.attempt');
    for (const attempt of attempts) expect(attempt.parentSpanId).toBe(ingest.spanId);
    const tracedAttempt = attempts.find((span) => span.spanId === attemptSpanId);
    expect(tracedAttempt, 'the span of the traceparent the receiver got').toBeDefined();
    expect(attributesOf(tracedAttempt!)).toMatchObject({
      'herald.webhook.id': hook.id,
      'herald.event.type': 'item.create',
      'herald.attempt.number': 1,
      'herald.attempt.trigger': 'first',
      'herald.attempt.outcome': 'success',
      'http.response.status_code': 200,
    });
    expect(attempts.map((span) => attributesOf(span)['herald.webhook.id']).sort()).toEqual(
      [hook.id, quiet.id].sort(),
    );

    // Bounded attributes: no payload, no secret, no token anywhere in what was exported.
    const exported = collector.bodies.join('\n');
    expect(exported).not.toContain(PAYLOAD_MARKER);
    expect(exported).not.toContain(hook.secret);
    expect(exported).not.toContain(ADMIN_TOKEN);
  });

  it('sends no traceparent and exports nothing without an OTLP endpoint', async () => {
    const { url } = await startHerald({});
    await createWebhook(url, 'untraced', traced.url);
    await createModel(url);
    const before = traced.requests.length;
    const exported = collector.bodies.length;
    const traceId = randomBytes(16).toString('hex');
    await postItem(url, { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` });

    await expect.poll(() => traced.requests.length, { timeout: 30_000 }).toBe(before + 1);
    expect(traced.requests[before]!.headers['traceparent']).toBeUndefined();
    expect(collector.bodies.length).toBe(exported);
  });
});
