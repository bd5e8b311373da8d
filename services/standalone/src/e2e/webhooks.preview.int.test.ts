import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseCidrList } from '@herald/contract';
import { createApp } from '@herald/ingest';
import { HERALD_VERSION } from '@herald/payload';
import type { Redis } from '@herald/runtime';
import {
  createTestDb,
  createTestToken,
  defaultPayloadKeys,
  randomId,
  serve,
  startReceiver,
  testDeps,
  testRedis,
  TEST_REDIS_URL,
  type Receiver,
  type TestDb,
  type TestServer,
  waitFor,
} from '@herald/testkit';
import { startE2eDelivery, type DeliveryRuntime } from '@herald/delivery/testing';

let t: TestDb;
let redis: Redis;
let server: TestServer;
let admin: string;
let reader: string;
/** A real endpoint that records what delivery sends it. */
let receiver: Receiver;
let delivery: DeliveryRuntime;

const SITE_ID = 'site-preview';

beforeAll(async () => {
  t = await createTestDb('postgres');
  redis = testRedis();
  const deps = testDeps(t.db, redis);
  const allow = parseCidrList('127.0.0.0/8');
  server = await serve(
    createApp({
      ...deps,
      ssrfAllowCidrs: allow,
      siteId: SITE_ID,
    }),
  );
  admin = await createTestToken(t.db, 'admin');
  reader = await createTestToken(t.db, 'read_only');

  receiver = await startReceiver();

  delivery = await startE2eDelivery({
    db: t.db,
    redisPrefix: deps.redisPrefix,
    siteId: SITE_ID,
    indexReloadMs: 200,
  });
});

afterAll(async () => {
  await delivery?.close();
  await server?.close();
  await receiver?.close();
  await redis?.quit();
  await t?.cleanup();
});

async function api(method: string, path: string, body?: unknown, token: string | null = admin) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'Content-Type': 'application/vnd.api+json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const BASE = {
  url: 'https://example.com/hooks/{{entity_type}}?event={{event_type}}',
  headers: { 'X-Team': 'content' },
  custom_payload: null,
  http_basic_user: null,
};

/** A webhook's request with nothing added: no headers, the default payload, no basic auth. */
const BARE = {
  headers: {},
  custom_payload: null,
  http_basic_user: null,
  http_basic_password: null,
};

function preview(attributes: Record<string, unknown>, token: string | null = admin) {
  return api('POST', '/webhooks/preview', { data: { type: 'webhook_preview', attributes } }, token);
}

/** The field errors of a 422, as `field code` strings. */
function fieldErrors(body: any): string[] {
  return body.data.map(
    (e: any) => `${e.attributes.details.field} ${e.attributes.details.code ?? e.attributes.code}`,
  );
}

describe('POST /webhooks/preview: validation (the same as creation)', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['a missing url', { ...BASE, url: undefined }, 'url VALIDATION_REQUIRED'],
    ['a missing headers key', { ...BASE, headers: undefined }, 'headers VALIDATION_REQUIRED'],
    [
      'a missing custom_payload key',
      { ...BASE, custom_payload: undefined },
      'custom_payload VALIDATION_REQUIRED',
    ],
    [
      'a missing http_basic_user key',
      { ...BASE, http_basic_user: undefined },
      'http_basic_user VALIDATION_REQUIRED',
    ],
    ['a relative url', { ...BASE, url: '/hooks' }, 'url VALIDATION_FORMAT'],
    ['an ftp url', { ...BASE, url: 'ftp://example.com/x' }, 'url VALIDATION_FORMAT'],
    [
      'a tag in the host',
      { ...BASE, url: 'https://{{site_id}}.example.com/' },
      'url VALIDATION_FORMAT',
    ],
    ['a blocked address', { ...BASE, url: 'http://10.1.2.3/hook' }, 'url VALIDATION_FORMAT'],
    ['a url that is not a string', { ...BASE, url: 42 }, 'url VALIDATION_TYPE'],
    ['a framing header', { ...BASE, headers: { Host: 'x' } }, 'headers.Host VALIDATION_FORMAT'],
    [
      'a header value with CR LF',
      { ...BASE, headers: { 'X-A': 'a\r\nb' } },
      'headers.X-A VALIDATION_FORMAT',
    ],
    [
      'a header name that is no token',
      { ...BASE, headers: { 'X A': 'a' } },
      'headers.X A VALIDATION_FORMAT',
    ],
    ['headers that are no object', { ...BASE, headers: ['x'] }, 'headers VALIDATION_TYPE'],
    [
      'a template syntax error',
      { ...BASE, custom_payload: '{"a": "{{#entity}}"}' },
      'custom_payload VALIDATION_FORMAT',
    ],
    [
      'a template that is no string',
      { ...BASE, custom_payload: 7 },
      'custom_payload VALIDATION_TYPE',
    ],
    [
      'a basic user with a colon',
      { ...BASE, http_basic_user: 'a:b' },
      'http_basic_user VALIDATION_FORMAT',
    ],
    [
      'nested_items_in_payload that is no boolean',
      { ...BASE, nested_items_in_payload: 'yes' },
      'nested_items_in_payload VALIDATION_TYPE',
    ],
    ['an event id of the wrong shape', { ...BASE, event_id: 'a b' }, 'event_id VALIDATION_FORMAT'],
    ['an unknown event', { ...BASE, event_id: 'evt-nope' }, 'event_id VALIDATION_INCLUSION'],
    ['an unknown webhook', { ...BASE, webhook_id: '999999' }, 'webhook_id VALIDATION_INCLUSION'],
    ['an unknown attribute', { ...BASE, colour: 'red' }, 'colour INVALID_ATTRIBUTES'],
    [
      'redact_headers that is no array',
      { ...BASE, redact_headers: 'X-Tenant' },
      'redact_headers VALIDATION_TYPE',
    ],
    [
      'a redact_headers name that is no token',
      { ...BASE, redact_headers: ['X Tenant'] },
      'redact_headers.0 VALIDATION_FORMAT',
    ],
    // Flow control (extension): the webhook's rules, and the events a call carries.
    [
      'an unknown delivery_order',
      { ...BASE, delivery_order: 'strict' },
      'delivery_order VALIDATION_INCLUSION',
    ],
    ['coalesce that is no boolean', { ...BASE, coalesce: 1 }, 'coalesce VALIDATION_TYPE'],
    [
      'a batch window under 10 ms',
      { ...BASE, batch: { window_ms: 5 } },
      'batch.window_ms VALIDATION_FORMAT',
    ],
    ['event_ids that is no array', { ...BASE, event_ids: 'evt-1' }, 'event_ids VALIDATION_TYPE'],
    ['empty event_ids', { ...BASE, event_ids: [] }, 'event_ids VALIDATION_LENGTH'],
    [
      'more than 1,000 event_ids',
      { ...BASE, event_ids: Array.from({ length: 1001 }, (_, i) => `evt-${i}`) },
      'event_ids VALIDATION_LENGTH',
    ],
    [
      'an id of the wrong shape in event_ids',
      { ...BASE, event_ids: ['evt-1', 'a b'] },
      'event_ids.1 VALIDATION_FORMAT',
    ],
    [
      'an id listed twice in event_ids',
      { ...BASE, event_ids: ['evt-1', 'evt-1'] },
      'event_ids.1 VALIDATION_UNIQUENESS',
    ],
    [
      'an unknown event in event_ids',
      { ...BASE, event_ids: ['evt-nope'] },
      'event_ids.0 VALIDATION_INCLUSION',
    ],
    [
      'both event_id and event_ids',
      { ...BASE, event_id: 'evt-1', event_ids: ['evt-1'] },
      'event_ids VALIDATION_FORMAT',
    ],
  ];

  it.each(cases)('answers 422 naming the field for %s', async (_name, attributes, expected) => {
    const response = await preview(
      JSON.parse(JSON.stringify(attributes)) as Record<string, unknown>,
    );
    expect(response.status).toBe(422);
    expect(fieldErrors(response.body)).toContain(expected);
  });

  it('reports every problem at once, with the template error position', async () => {
    const response = await preview({
      url: 'nope',
      headers: { Connection: 'close' },
      custom_payload: 'line one\n{{/entity}}',
      http_basic_user: null,
    });
    expect(response.status).toBe(422);
    expect(fieldErrors(response.body)).toEqual([
      'url VALIDATION_FORMAT',
      'headers.Connection VALIDATION_FORMAT',
      'custom_payload VALIDATION_FORMAT',
    ]);
    const template = response.body.data[2].attributes.details;
    expect(template).toMatchObject({ line: 2 });
  });

  it('answers INVALID_FORMAT for another resource type', async () => {
    const response = await api('POST', '/webhooks/preview', {
      data: { type: 'webhook', attributes: BASE },
    });
    expect(response.status).toBe(422);
    expect(response.body.data[0].attributes.code).toBe('INVALID_FORMAT');
  });

  it('is for admins only', async () => {
    expect((await preview(BASE, reader)).status).toBe(403);
    expect((await preview(BASE, null)).status).toBe(401);
  });
});

describe('POST /webhooks/preview: rendering', () => {
  it('renders a sample event when no event is named, secrets masked, nothing sent', async () => {
    const before = receiver.requests.length;
    const response = await preview({
      ...BASE,
      http_basic_user: 'user',
      http_basic_password: 'hunter2',
      custom_payload: '{"record": "{{entity.id}}", "title": "{{entity.attributes.title.en}}"}',
    });
    expect(response.status).toBe(200);
    const { attributes } = response.body.data;
    expect(response.body.data.type).toBe('webhook_preview');
    expect(attributes.url).toBe('https://example.com/hooks/item?event=publish');
    expect(attributes.body).toBe('{"record": "sample-record-id", "title": "Hello from Herald"}');
    expect(attributes.sample_event).toBe(true);
    expect(attributes.headers).toMatchObject({
      'Content-Type': 'application/json',
      'User-Agent': `Herald/${HERALD_VERSION}`,
      'X-Team': 'content',
      Authorization: 'Basic ***',
      'webhook-signature': 'v1,***',
    });
    expect(JSON.stringify(attributes)).not.toContain('hunter2');
    expect(receiver.requests.length).toBe(before);
  });

  it('masks credential headers and the given redact_headers as the call log does', async () => {
    const response = await preview({
      ...BASE,
      headers: { 'X-Team': 'content', 'X-Api-Key': 'key-123', 'X-Tenant': 'tenant-7' },
      redact_headers: ['x-tenant'],
    });
    expect(response.status).toBe(200);
    expect(response.body.data.attributes.headers).toMatchObject({
      'X-Team': 'content',
      'X-Api-Key': '***',
      'X-Tenant': '***',
      'webhook-signature': 'v1,***',
    });
    expect(JSON.stringify(response.body)).not.toMatch(/key-123|tenant-7/);
  });

  it('renders the default payload with its keys in the contract order', async () => {
    const response = await preview(BASE);
    expect(response.status).toBe(200);
    expect(Object.keys(JSON.parse(response.body.data.attributes.body))).toEqual(
      defaultPayloadKeys(),
    );
  });
});

/** A publish event of a record of `model` (at a fixed time), for POST /events. */
function publishEvent(
  id: string,
  model: string,
  attributes: Record<string, unknown>,
  recordId = randomId('rec'),
) {
  return {
    type: 'event',
    id,
    attributes: {
      entity_type: 'item',
      event_type: 'publish',
      occurred_at: '2026-11-21T10:00:00Z',
      entity: {
        type: 'item',
        id: recordId,
        attributes,
        relationships: { item_type: { data: { type: 'item_type', id: model } } },
        meta: { status: 'published' },
      },
    },
  };
}

/** A model's create event for POST /events, its fields (not localized) in the order given. */
function modelEvent(
  id: string,
  attributes: Record<string, unknown>,
  fields: { id: string; api_key: string; field_type: string; label: string }[],
) {
  return {
    type: 'event',
    attributes: {
      entity_type: 'item_type',
      event_type: 'create',
      entity: { type: 'item_type', id, attributes },
      related_entities: fields.map(({ id: fieldId, ...field }, position) => ({
        type: 'field',
        id: fieldId,
        attributes: { ...field, localized: false, position },
      })),
    },
  };
}

/** The model of the records storeItemEvents changes: a note with a title. */
const NOTE_MODEL = 'note';

/** When the next stored item event occurs: each one a second after the previous one. */
let clock = Date.UTC(2026, 10, 21, 9, 0, 0);

/** Stores item events of `record`, occurring in this order after every earlier one; their ids. */
async function storeItemEvents(
  record: string,
  events: { type: string; title: string; previous?: string }[],
): Promise<string[]> {
  const ids = events.map(() => randomId('evt'));
  const entity = (title: string) => ({
    type: 'item',
    id: record,
    attributes: { title },
    relationships: { item_type: { data: { type: 'item_type', id: NOTE_MODEL } } },
  });
  const response = await api('POST', '/events', {
    data: events.map((event, index) => ({
      type: 'event',
      id: ids[index],
      attributes: {
        entity_type: 'item',
        event_type: event.type,
        occurred_at: new Date((clock += 1000)).toISOString(),
        entity: entity(event.title),
        ...(event.previous !== undefined && { previous_entity: entity(event.previous) }),
      },
    })),
  });
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return ids;
}

describe('POST /webhooks/preview: destinations and endpoint authentication', () => {
  it('shows a broker message: where it is published, its headers, credentials hidden', async () => {
    const before = receiver.requests.length;
    const response = await preview({
      ...BASE,
      headers: { 'X-Team': 'content', 'X-Api-Key': 'key-123' },
      http_basic_user: 'user',
      http_basic_password: 'hunter2',
      destination: {
        kind: 'rabbitmq',
        url: 'amqp://herald:mq-secret@127.0.0.1:5672/prod',
        exchange: 'content',
        routing_key: 'items',
        username: null,
        password: null,
      },
    });
    expect(response.status).toBe(200);
    const { attributes } = response.body.data;
    expect(attributes.url).toBe(
      'rabbitmq: amqp://herald:***@127.0.0.1:5672/prod exchange=content routing_key=items',
    );
    expect(attributes.destination).toEqual({
      kind: 'rabbitmq',
      url: 'amqp://herald:***@127.0.0.1:5672/prod',
      exchange: 'content',
      routing_key: 'items',
      username: null,
      password: null,
    });
    // The message's headers: lower case, signed, no Basic auth (it is HTTP's).
    expect(attributes.headers).toEqual({
      'content-type': 'application/json',
      'user-agent': `Herald/${HERALD_VERSION}`,
      'x-team': 'content',
      'x-api-key': '***',
      'webhook-id': 'preview',
      'webhook-timestamp': expect.stringMatching(/^\d+$/),
      'webhook-signature': 'v1,***',
    });
    expect(JSON.parse(attributes.body).entity.id).toBe('sample-record-id');
    expect(JSON.stringify(response.body)).not.toMatch(/mq-secret|hunter2|key-123/);
    expect(receiver.requests.length).toBe(before);

    const kinds: [Record<string, unknown>, string][] = [
      [
        { kind: 'nats', url: 'nats://127.0.0.1:4222', subject: 'content.items' },
        'nats: nats://127.0.0.1:4222 subject=content.items (JetStream)',
      ],
      [
        { kind: 'mqtt', url: 'mqtt://127.0.0.1:1883', topic: 'content/items', password: 'p' },
        'mqtt: mqtt://127.0.0.1:1883 topic=content/items (QoS 1)',
      ],
      [
        { kind: 'redis_stream', url: 'redis://127.0.0.1:6379/0', stream: 'content' },
        'redis_stream: redis://127.0.0.1:6379/0 stream=content (MAXLEN ~ 10000)',
      ],
    ];
    for (const [destination, where] of kinds) {
      const shown = (await preview({ ...BASE, destination })).body.data.attributes;
      expect(shown.url).toBe(where);
      expect(shown.destination.kind).toBe(destination['kind']);
      expect(shown.destination.password).toBe(destination['password'] ? '***' : null);
      expect(shown.headers['webhook-signature']).toBe('v1,***');
    }
    // Without a destination: HTTP to url, as before.
    const http = (await preview(BASE)).body.data.attributes;
    expect(http.destination).toEqual({ kind: 'http' });
    expect(http.url).toBe('https://example.com/hooks/item?event=publish');
  });

  it('shows the OAuth2 bearer token in place of Basic auth, never a secret', async () => {
    const response = await preview({
      ...BASE,
      http_basic_user: 'user',
      http_basic_password: 'hunter2',
      auth: {
        kind: 'oauth2_client_credentials',
        token_url: 'https://auth.example.com/oauth/token',
        client_id: 'herald',
        client_secret: 'client-secret-1',
      },
    });
    expect(response.status).toBe(200);
    expect(response.body.data.attributes.headers.Authorization).toBe('Bearer ***');
    expect(JSON.stringify(response.body)).not.toMatch(/hunter2|client-secret-1/);
  });

  it('validates the destination, auth and tls as creation does, naming the field', async () => {
    const response = await preview({
      ...BASE,
      destination: { kind: 'nats', url: 'http://127.0.0.1:4222', subject: 'content.*' },
      auth: { kind: 'oauth2_client_credentials', token_url: 'ftp://x', client_id: 'herald' },
      tls: { client_certificate: 'not a pem', client_key: null, ca_certificate: null },
    });
    expect(response.status).toBe(422);
    expect(fieldErrors(response.body)).toEqual(
      expect.arrayContaining([
        'destination.url VALIDATION_FORMAT',
        'destination.subject VALIDATION_FORMAT',
        'auth.token_url VALIDATION_FORMAT',
        'tls.client_certificate VALIDATION_FORMAT',
      ]),
    );
  });

  it('is what delivery publishes to a real Redis stream, byte for byte', async () => {
    const stream = randomId('herald-test-preview-stream');
    const destination = {
      kind: 'redis_stream',
      url: TEST_REDIS_URL,
      stream,
      max_len: 100,
      username: null,
      password: null,
    };
    const attributes = {
      url: 'https://unused.example/hook',
      headers: { 'X-Team': 'content' },
      custom_payload: null,
      http_basic_user: null,
      destination,
    };
    const created = await api('POST', '/webhooks', {
      data: {
        type: 'webhook',
        attributes: {
          name: randomId('stream'),
          events: [{ entity_type: 'item', event_types: ['publish'] }],
          http_basic_password: null,
          ...attributes,
        },
      },
    });
    expect(created.status).toBe(201);
    const webhookId: string = created.body.data.id;
    try {
      await waitFor(
        () => {
          if (!delivery.index.has(webhookId)) throw new Error('not indexed yet');
        },
        { timeout: 10_000, interval: 50 },
      );
      const eventId = randomId('evt');
      const model = randomId('streamed');
      const published = await api('POST', '/events', {
        data: [
          modelEvent(model, { name: 'Streamed', api_key: model }, [
            { id: randomId('f'), api_key: 'title', field_type: 'string', label: 'Title' },
          ]),
          publishEvent(eventId, model, { title: 'On a stream' }),
        ],
      });
      expect(published.status).toBe(202);
      const entries = await vi.waitFor(
        async () => {
          const found = await redis.xrange(stream, '-', '+');
          expect(found.length).toBeGreaterThan(0);
          return found;
        },
        { timeout: 15_000, interval: 50 },
      );
      const [, flat] = entries[0]!;
      const fields: Record<string, string> = {};
      for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
      const { body: publishedBody, ...headers } = fields;

      const shown = (await preview({ ...attributes, event_id: eventId, webhook_id: webhookId }))
        .body.data.attributes;
      const callId = headers['webhook-id']!;
      expect(
        shown.body.replace('"webhook_call_id":"preview"', `"webhook_call_id":"${callId}"`),
      ).toBe(publishedBody);
      const perCall = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];
      const without = (all: Record<string, string>) =>
        Object.fromEntries(Object.entries(all).filter(([name]) => !perCall.includes(name)));
      expect(without(shown.headers)).toEqual(without(headers));
      expect(Object.keys(shown.headers).sort()).toEqual(Object.keys(headers).sort());
      // The stream has the entry before the call's outcome (its request_url) is written.
      await waitFor(async () => {
        const call = await api('GET', `/webhook_calls?filter[fields][webhook_id][eq]=${webhookId}`);
        expect(shown.url).toBe(call.body.data[0].attributes.request_url);
      });
    } finally {
      await redis.del(stream);
      await api('DELETE', `/webhooks/${webhookId}`);
    }
  });
});

describe('POST /webhooks/preview: flow control (event_ids)', () => {
  beforeAll(async () => {
    const response = await api('POST', '/events', {
      data: [
        modelEvent(NOTE_MODEL, { name: 'Note', api_key: NOTE_MODEL }, [
          { id: 'f-note-title', api_key: 'title', field_type: 'string', label: 'Title' },
        ]),
      ],
    });
    expect(response.status).toBe(202);
  });

  it('renders a coalesced call: the latest state once, named by how the run began and ended', async () => {
    const record = randomId('rec');
    const [created, first, second] = await storeItemEvents(record, [
      { type: 'create', title: 'One' },
      { type: 'update', title: 'Two' },
      { type: 'update', title: 'Three' },
    ]);
    // Given in any order: the call carries them in the producer's.
    const response = await preview({
      ...BASE,
      coalesce: true,
      event_ids: [second, created, first],
    });
    expect(response.status).toBe(200);
    const shown = response.body.data.attributes;
    expect(shown).toMatchObject({
      url: 'https://example.com/hooks/item?event=create',
      event_id: second,
      event_ids: [created, first, second],
      batch_entries: null,
      sample_event: false,
      entity_type: 'item',
      event_type: 'create',
    });
    const body = JSON.parse(shown.body);
    expect(body).toMatchObject({
      event_type: 'create',
      entity: { attributes: { title: 'Three' } },
    });
    expect(body).not.toHaveProperty('events');

    // A delete ends the run: the call is a delete; previous_entity is the one before the first.
    const gone = randomId('rec');
    const ids = await storeItemEvents(gone, [
      { type: 'update', title: 'B', previous: 'A' },
      { type: 'update', title: 'C' },
      { type: 'delete', title: 'C' },
    ]);
    const deleted = JSON.parse(
      (await preview({ ...BASE, coalesce: true, event_ids: ids })).body.data.attributes.body,
    );
    expect(deleted).toMatchObject({
      event_type: 'delete',
      previous_entity: { id: gone, attributes: { title: 'A' } },
    });
  });

  it('renders a batch: one entry per event, or per entity with coalesce, in `events`', async () => {
    const a = randomId('rec');
    const b = randomId('rec');
    const [a1] = await storeItemEvents(a, [{ type: 'update', title: 'A1' }]);
    const [b1] = await storeItemEvents(b, [{ type: 'update', title: 'B1' }]);
    const [a2] = await storeItemEvents(a, [{ type: 'update', title: 'A2' }]);
    const byOrder = [a1!, b1!, a2!];
    const batch = { window_ms: 1000 };

    const plain = await preview({ ...BASE, batch, event_ids: byOrder });
    expect(plain.status).toBe(200);
    expect(plain.body.data.attributes).toMatchObject({ batch_entries: 3, event_ids: byOrder });
    const all = JSON.parse(plain.body.data.attributes.body);
    expect(Object.keys(all).at(-1)).toBe('events');
    expect(all.events).toHaveLength(3);
    // An entry has the keys of the default payload that describe its event, not the call's.
    const callKeys = ['webhook_call_id', 'attempted_auto_retries_count', 'webhook_id', 'site_id'];
    const eventKeys = Object.keys(all).filter((k) => !callKeys.includes(k) && k !== 'events');
    expect(eventKeys).toContain('entity');
    expect(Object.keys(all.events[0])).toEqual(eventKeys);

    const coalesced = await preview({ ...BASE, batch, coalesce: true, event_ids: byOrder });
    expect(coalesced.body.data.attributes.batch_entries).toBe(2);
    const merged = JSON.parse(coalesced.body.data.attributes.body);
    // Each record once, with its latest state; an entry stands where its latest event does.
    expect(merged.events.map((e: any) => [e.entity.id, e.entity.attributes.title])).toEqual([
      [b, 'B1'],
      [a, 'A2'],
    ]);
    // The other keys are the last entry's.
    expect(merged.entity.id).toBe(a);

    // Mustache: the `events` list section.
    const template = await preview({
      ...BASE,
      batch,
      coalesce: true,
      event_ids: byOrder,
      custom_payload: '{{#events}}{{entity.id}}={{entity.attributes.title}};{{/events}}',
    });
    expect(template.body.data.attributes.body).toBe(`${b}=B1;${a}=A2;`);

    // The sample event makes a batch of one.
    const sample = await preview({ ...BASE, batch });
    expect(sample.status).toBe(200);
    expect(sample.body.data.attributes).toMatchObject({
      sample_event: true,
      event_ids: [],
      batch_entries: 1,
    });
    expect(JSON.parse(sample.body.data.attributes.body).events).toHaveLength(1);
  });

  it('refuses events one call of these settings would not carry together', async () => {
    const a = randomId('rec');
    const b = randomId('rec');
    const [a1, a2] = await storeItemEvents(a, [
      { type: 'update', title: 'A1' },
      { type: 'update', title: 'A2' },
    ]);
    const [b1] = await storeItemEvents(b, [{ type: 'update', title: 'B1' }]);
    const refused = async (attributes: Record<string, unknown>, expected: string) => {
      const response = await preview({ ...BASE, ...attributes });
      expect(response.status).toBe(422);
      expect(fieldErrors(response.body)).toEqual([expected]);
    };
    // Several events without coalesce or batch: each would have its own call.
    await refused({ event_ids: [a1, a2] }, 'event_ids VALIDATION_FORMAT');
    // Coalescing merges one entity's events only.
    await refused({ coalesce: true, event_ids: [a1, b1] }, 'event_ids VALIDATION_FORMAT');
    // More entries than the batch holds.
    await refused(
      { batch: { window_ms: 100, max_events: 2 }, event_ids: [a1, a2, b1] },
      'event_ids VALIDATION_LENGTH',
    );
    // With coalesce they are two entries: they fit.
    const fits = await preview({
      ...BASE,
      coalesce: true,
      batch: { window_ms: 100, max_events: 2 },
      event_ids: [a1, a2, b1],
    });
    expect(fits.status).toBe(200);
  });
});

describe('POST /webhooks/preview: byte for byte what delivery sends', () => {
  it('matches the request a real receiver gets for the same event', async () => {
    // A model with blocks, so that nested_items_in_payload changes the entity.
    const models = await api('POST', '/events', {
      data: [
        modelEvent('section', { name: 'Section', api_key: 'section', modular_block: true }, [
          { id: 'f-heading', api_key: 'heading', field_type: 'string', label: 'Heading' },
        ]),
        modelEvent('article', { name: 'Article', api_key: 'article' }, [
          { id: 'f-title', api_key: 'title', field_type: 'string', label: 'Title' },
          { id: 'f-content', api_key: 'content', field_type: 'rich_text', label: 'Content' },
        ]),
      ],
    });
    expect(models.status).toBe(202);

    const custom = {
      url: `${receiver.url}/custom/{{entity_type}}?event={{event_type}}&env={{environment}}`,
      headers: { 'X-Team': 'content', 'User-Agent': 'Receiver-Test/1' },
      custom_payload:
        '{"event": "{{entity_type}}.{{event_type}}", "at": "{{event_triggered_at}}", ' +
        '"site": "{{site_id}}", "title": "{{entity.attributes.title}}", "entity": {{{entity}}}}',
      http_basic_user: 'user',
      http_basic_password: 'secret-pw',
      nested_items_in_payload: true,
    };
    const plain = { url: `${receiver.url}/plain`, ...BARE, nested_items_in_payload: false };
    const created: Record<string, string> = {};
    for (const [name, attributes] of Object.entries({ custom, plain })) {
      const response = await api('POST', '/webhooks', {
        data: {
          type: 'webhook',
          attributes: {
            name: randomId(name),
            events: [{ entity_type: 'item', event_types: ['publish'] }],
            ...attributes,
          },
        },
      });
      expect(response.status).toBe(201);
      created[name] = response.body.data.id;
    }

    const eventId = randomId('evt');
    // The match workers' index learns of the webhooks over pub/sub (and reloads every 200 ms).
    const publish = {
      data: [
        publishEvent(
          eventId,
          'article',
          {
            title: 'Quotes " and \\ backslashes',
            content: [
              {
                type: 'item',
                id: 'blk-1',
                attributes: { heading: 'First' },
                relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
              },
            ],
          },
          'rec-1',
        ),
      ],
    };
    await waitFor(
      () => {
        for (const id of Object.values(created)) {
          if (!delivery.index.has(id)) throw new Error(`webhook ${id} not indexed yet`);
        }
      },
      { timeout: 10_000, interval: 50 },
    );
    expect((await api('POST', '/events', publish)).status).toBe(202);
    await waitFor(() => expect(receiver.requests.length).toBeGreaterThanOrEqual(2), {
      timeout: 15_000,
      interval: 50,
    });

    for (const [name, attributes] of Object.entries({ custom, plain })) {
      const delivered = receiver.requests.find((r) => r.url.startsWith(`/${name}`))!;
      expect(delivered).toBeDefined();
      const response = await preview({
        ...attributes,
        event_id: eventId,
        webhook_id: created[name],
      });
      expect(response.status).toBe(200);
      const shown = response.body.data.attributes;
      const callId = String(delivered.headers['webhook-id']);

      expect(new URL(shown.url).pathname + new URL(shown.url).search).toBe(delivered.url);
      if (name === 'custom') {
        // The template names no call id: the bytes are the same.
        expect(shown.body).toBe(delivered.body);
        expect(delivered.body).toContain('"title": "Quotes \\" and \\\\ backslashes"');
        expect(JSON.parse(delivered.body).entity.attributes.content[0].id).toBe('blk-1');
        expect(shown.headers.Authorization).toBe('Basic ***');
        expect(delivered.headers.authorization).toBe(
          `Basic ${Buffer.from('user:secret-pw').toString('base64')}`,
        );
      } else {
        // Only the call id differs: a preview has no call.
        expect(
          shown.body.replace('"webhook_call_id":"preview"', `"webhook_call_id":"${callId}"`),
        ).toBe(delivered.body);
      }
      // Every header delivery sent, the same, but for the per-call and secret-derived ones.
      for (const [header, value] of Object.entries(shown.headers as Record<string, string>)) {
        const lower = header.toLowerCase();
        if (
          ['authorization', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].includes(lower)
        ) {
          continue;
        }
        expect(delivered.headers[lower]).toBe(value);
      }
      expect(
        Object.keys(shown.headers)
          .map((h) => h.toLowerCase())
          .sort(),
      ).toEqual(
        Object.keys(delivered.headers)
          .filter((h) => !['host', 'content-length', 'connection'].includes(h))
          .sort(),
      );
    }
  });

  it('matches the batch a real receiver gets, given the events its call carries', async () => {
    const attributes = {
      url: `${receiver.url}/batched`,
      ...BARE,
      coalesce: true,
      batch: { window_ms: 2000, max_events: 10 },
    };
    const response = await api('POST', '/webhooks', {
      data: {
        type: 'webhook',
        attributes: {
          ...attributes,
          name: randomId('batched'),
          events: [{ entity_type: 'item', event_types: ['create', 'update'] }],
        },
      },
    });
    expect(response.status).toBe(201);
    const id: string = response.body.data.id;
    await waitFor(() => expect(delivery.index.has(id)).toBe(true), { timeout: 10_000 });

    const a = randomId('rec');
    const b = randomId('rec');
    await storeItemEvents(a, [{ type: 'create', title: 'A1' }]);
    await storeItemEvents(b, [{ type: 'update', title: 'B1' }]);
    await storeItemEvents(a, [{ type: 'update', title: 'A2' }]);
    const delivered = await waitFor(
      () => {
        const found = receiver.requests.find((r) => r.url === '/batched');
        if (!found) throw new Error('no batch received yet');
        return found;
      },
      { timeout: 15_000, interval: 50 },
    );
    const calls = await api('GET', `/webhook_calls?filter[fields][webhook_id][eq]=${id}`);
    expect(calls.body.data).toHaveLength(1);
    const call = calls.body.data[0];
    expect(call.attributes.event_ids).toHaveLength(3);

    const shown = await preview({
      ...attributes,
      event_ids: call.attributes.event_ids,
      webhook_id: id,
    });
    expect(shown.status).toBe(200);
    expect(shown.body.data.attributes.batch_entries).toBe(2);
    // Only the call id differs: a preview has no call.
    expect(
      shown.body.data.attributes.body.replace(
        '"webhook_call_id":"preview"',
        `"webhook_call_id":"${call.id}"`,
      ),
    ).toBe(delivered.body);
    expect(JSON.parse(delivered.body).events.map((e: any) => e.entity.attributes.title)).toEqual([
      'B1',
      'A2',
    ]);
  });
});
