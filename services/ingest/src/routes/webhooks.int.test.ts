import { describe, expect } from 'vitest';
import { parseCidrList, webhooksChangedChannel } from '@herald/contract';
import { activeSigningSecrets, findWebhook } from '@herald/store';
import {
  createTestToken,
  serve,
  testApi,
  testDeps,
  testRedis,
  type TestApi,
  waitFor,
} from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

const it = appTest(createApp);

const messages: string[] = [];
it.beforeAll(async ({ deps }) => {
  const subscriber = testRedis('worker');
  await subscriber.subscribe(webhooksChangedChannel(deps.redisPrefix));
  subscriber.on('message', (_channel: string, message: string) => messages.push(message));
  return () => subscriber.quit();
});

let counter = 0;
function attributes(overrides: Record<string, unknown> = {}) {
  counter += 1;
  return {
    name: `hook ${counter}`,
    url: 'https://example.com/hook',
    headers: { 'X-Foo': 'Bar' },
    events: [{ entity_type: 'item', event_types: ['publish', 'unpublish'] }],
    custom_payload: null,
    http_basic_user: null,
    http_basic_password: null,
    ...overrides,
  };
}
const create = (api: TestApi, attrs: Record<string, unknown>) =>
  api.call('POST', '/webhooks', { data: { type: 'webhook', attributes: attrs } });

describe('POST /webhooks', () => {
  it('creates a webhook with the defaults and a whsec_ signing secret', async ({ api }) => {
    const attrs = attributes();
    const response = await create(api, attrs);
    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const { data } = response.body;
    expect(data.type).toBe('webhook');
    expect(data.id).toMatch(/^[1-9]\d*$/);
    expect(data.attributes).toMatchObject({
      ...attrs,
      enabled: true,
      payload_api_version: '3',
      nested_items_in_payload: false,
      auto_retry: true,
      redact_headers: [],
      delivery_policy: {},
      delivery_order: 'any',
      coalesce: false,
      batch: null,
      disabled_reason: null,
    });
    expect(Buffer.from(data.attributes.signing_secret.slice(6), 'base64')).toHaveLength(32);
    expect(data.attributes.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(new Date(data.attributes.created_at).getTime()).not.toBeNaN();
    expect(data.attributes.updated_at).toBe(data.attributes.created_at);
  });

  it('keeps the optional attributes that are sent', async ({ api }) => {
    const kept = {
      enabled: false,
      nested_items_in_payload: true,
      auto_retry: false,
      redact_headers: ['X-Tenant', 'x-other'],
      delivery_policy: { rate_limit_per_second: 2.5, circuit_failures: 0 },
      http_basic_user: 'user',
      http_basic_password: 'password',
      custom_payload: '{"type":"{{event_type}}","id":"{{#entity}}{{id}}{{/entity}}"}',
    };
    const response = await create(api, attributes({ payload_api_version: '3', ...kept }));
    expect(response.status).toBe(201);
    expect(response.body.data.attributes).toMatchObject(kept);
  });

  it('keeps flow control, filling batch.max_events, and PUT changes or removes it', async ({
    api,
  }) => {
    const flow = { delivery_order: 'any', coalesce: true, batch: { window_ms: 250 } };
    const created = await create(api, attributes(flow));
    expect(created.status).toBe(201);
    const { id } = created.body.data;
    const expected = { ...flow, batch: { window_ms: 250, max_events: 100 } };
    expect(created.body.data.attributes).toMatchObject(expected);
    expect((await api.call('GET', `/webhooks/${id}`)).body.data.attributes).toMatchObject(expected);

    const put = (attrs: Record<string, unknown>) =>
      api.call('PUT', `/webhooks/${id}`, { data: { type: 'webhook', attributes: attrs } });
    const resized = await put({ batch: { window_ms: 600_000, max_events: null } });
    expect(resized.body.data.attributes).toMatchObject({
      delivery_order: 'any',
      coalesce: true,
      batch: { window_ms: 600_000, max_events: 100 },
    });
    const removed = await put({ delivery_order: 'any', coalesce: false, batch: null });
    expect(removed.status).toBe(200);
    expect(removed.body.data.attributes).toMatchObject({
      delivery_order: 'any',
      coalesce: false,
      batch: null,
    });
    expect((await api.call('GET', `/webhooks/${id}`)).body.data.attributes.batch).toBeNull();
  });

  it('echoes each events entry in the shape it was sent (filter or filters)', async ({ api }) => {
    const events = [
      {
        entity_type: 'item',
        event_types: ['publish'],
        filter: { entity_type: 'item_type', entity_ids: ['article'] },
      },
      {
        entity_type: 'item',
        event_types: ['update', 'delete'],
        filters: [
          { entity_type: 'item_type', entity_ids: ['article', 'page'] },
          { entity_type: 'environment', entity_ids: ['main'] },
        ],
      },
      { entity_type: 'item_type', event_types: ['create'], filters: null },
      { entity_type: 'cda_cache_tags', event_types: ['invalidate'] },
      {
        entity_type: 'environment',
        event_types: ['promote'],
        filter: { entity_type: 'environment_type', entity_ids: ['sandbox'] },
      },
    ];
    const response = await create(api, attributes({ events }));
    expect(response.status).toBe(201);
    expect(response.body.data.attributes.events).toEqual(events);
    expect(JSON.stringify(response.body.data.attributes.events)).toBe(JSON.stringify(events));
    const fetched = await api.call('GET', `/webhooks/${response.body.data.id}`);
    expect(JSON.stringify(fetched.body.data.attributes.events)).toBe(JSON.stringify(events));
  });

  it('keeps Mustache tags in the url path and query', async ({ api }) => {
    const url =
      'https://example.com/hooks/{{entity_type}}/{{#entity}}{{id}}{{/entity}}?e={{event_type}}';
    const response = await create(api, attributes({ url }));
    expect(response.status).toBe(201);
    expect(response.body.data.attributes.url).toBe(url);
  });

  it('keeps the name unique under concurrent creates', async ({ api }) => {
    const attrs = attributes();
    const responses = await Promise.all(Array.from({ length: 8 }, () => create(api, attrs)));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 422, 422, 422, 422, 422, 422, 422]);
    for (const response of responses.filter((r) => r.status === 422)) {
      expect(response.body.data[0].attributes).toMatchObject({
        code: 'INVALID_FIELD',
        details: { field: 'name', code: 'VALIDATION_UNIQUENESS' },
      });
    }
  });
});

describe('lifecycle', () => {
  it('lists, retrieves, updates and destroys', async ({ api }) => {
    const created = (await create(api, attributes())).body.data;
    const list = await api.call('GET', '/webhooks');
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: { id: string }) => w.id)).toContain(created.id);
    const ids = list.body.data.map((w: { id: string }) => Number(w.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));

    const retrieved = await api.call('GET', `/webhooks/${created.id}`);
    expect(retrieved.status).toBe(200);
    expect(retrieved.body.data).toEqual(created);

    const updated = await api.call('PUT', `/webhooks/${created.id}`, {
      data: {
        type: 'webhook',
        id: created.id,
        attributes: { enabled: false, name: 'renamed', redact_headers: ['X-Tenant'] },
      },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data.attributes).toMatchObject({
      ...created.attributes,
      enabled: false,
      name: 'renamed',
      redact_headers: ['X-Tenant'],
      disabled_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(updated.body.data.attributes.signing_secret).toBe(created.attributes.signing_secret);

    const destroyed = await api.call('DELETE', `/webhooks/${created.id}`);
    expect(destroyed.status).toBe(200);
    expect(destroyed.body.data).toEqual(updated.body.data);
    expect((await api.call('GET', `/webhooks/${created.id}`)).status).toBe(404);
    expect((await api.call('DELETE', `/webhooks/${created.id}`)).status).toBe(404);
  });

  it('lists exactly what retrieve shows, through updates, rotations, deletes and direct SQL', async ({
    api,
    db,
  }) => {
    const expectListMatchesRetrieve = async () => {
      const list = await api.call('GET', '/webhooks');
      expect(list.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const ids: string[] = list.body.data.map((w: { id: string }) => w.id);
      const { rows } = await db.query<{ id: string }>('SELECT id FROM webhooks ORDER BY id');
      expect(ids).toEqual(rows.map((r) => r.id));
      for (const webhook of list.body.data) {
        const one = await api.call('GET', `/webhooks/${webhook.id}`);
        expect(JSON.stringify(webhook)).toBe(JSON.stringify(one.body.data));
      }
    };
    const a = (await create(api, attributes())).body.data;
    const b = (await create(api, attributes())).body.data;
    await expectListMatchesRetrieve();
    await api.call('PUT', `/webhooks/${a.id}`, {
      data: { type: 'webhook', attributes: { url: 'https://example.com/changed' } },
    });
    await api.call('POST', `/webhooks/${b.id}/rotate_secret`);
    await expectListMatchesRetrieve();
    await api.call('DELETE', `/webhooks/${b.id}`);
    await db.query(`UPDATE webhooks SET disabled_reason = 'set by hand' WHERE id = $1`, [a.id]);
    await expectListMatchesRetrieve();
    const listed = (await api.call('GET', '/webhooks')).body.data.find(
      (w: { id: string }) => w.id === a.id,
    );
    expect(listed.attributes).toMatchObject({
      url: 'https://example.com/changed',
      disabled_reason: 'set by hand',
    });
  });

  it('validates updates with the create rules, on the given subset only', async ({ api }) => {
    const created = (await create(api, attributes())).body.data;
    const other = (await create(api, attributes())).body.data;
    const response = await api.call('PUT', `/webhooks/${created.id}`, {
      data: {
        type: 'webhook',
        attributes: { name: other.attributes.name, events: [{ entity_type: 'item' }], bogus: 1 },
      },
    });
    expect(response.status).toBe(422);
    const details = response.body.data.map(
      (e: { attributes: { code: string; details: { field: string; code?: string } } }) => [
        e.attributes.code,
        e.attributes.details.field,
        e.attributes.details.code,
      ],
    );
    expect(details).toEqual(
      expect.arrayContaining([
        ['INVALID_ATTRIBUTES', 'bogus', undefined],
        ['INVALID_FIELD', 'events.0.event_types', 'VALIDATION_REQUIRED'],
        ['INVALID_FIELD', 'name', 'VALIDATION_UNIQUENESS'],
      ]),
    );
    // Alone, a taken name is caught by the unique index.
    const taken = await api.call('PUT', `/webhooks/${created.id}`, {
      data: { type: 'webhook', attributes: { name: other.attributes.name } },
    });
    expect(taken.status).toBe(422);
    expect(taken.body.data[0].attributes.details).toMatchObject({
      field: 'name',
      code: 'VALIDATION_UNIQUENESS',
    });
    // Keeping one's own name is fine.
    const same = await api.call('PUT', `/webhooks/${created.id}`, {
      data: { type: 'webhook', attributes: { name: created.attributes.name } },
    });
    expect(same.status).toBe(200);
  });

  it('re-enabling a webhook clears its disabled_reason', async ({ api, db }) => {
    const created = (await create(api, attributes())).body.data;
    await db.query(
      `UPDATE webhooks SET enabled = false, disabled_reason = 'endpoint answered 410' WHERE id = $1`,
      [created.id],
    );
    const disabled = await api.call('GET', `/webhooks/${created.id}`);
    expect(disabled.body.data.attributes.disabled_reason).toBe('endpoint answered 410');
    const enabled = await api.call('PUT', `/webhooks/${created.id}`, {
      data: { type: 'webhook', attributes: { enabled: true } },
    });
    expect(enabled.body.data.attributes).toMatchObject({ enabled: true, disabled_reason: null });
  });

  it('re-enabling offers a replay of what the webhook missed while disabled', async ({ api }) => {
    const created = (await create(api, attributes())).body.data;
    const put = (attrs: Record<string, unknown>) =>
      api.call('PUT', `/webhooks/${created.id}`, { data: { type: 'webhook', attributes: attrs } });
    const disabled = await put({ enabled: false });
    const disabledAt = disabled.body.data.attributes.disabled_at as string;
    expect(Date.parse(disabledAt)).toBeGreaterThan(Date.parse(created.attributes.updated_at) - 1);
    expect(disabled.body.meta).toBeUndefined();
    // Disabling again, or editing it while disabled, keeps when it was first disabled.
    expect((await put({ enabled: false })).body.data.attributes.disabled_at).toBe(disabledAt);
    expect((await put({ name: `${created.attributes.name} (off)` })).body.meta).toBeUndefined();

    const enabled = await put({ enabled: true });
    expect(enabled.body.data.attributes).toMatchObject({ enabled: true, disabled_at: null });
    expect(enabled.body.meta).toEqual({
      replay_offer: {
        kind: 'replay',
        webhook_id: created.id,
        filter: {
          occurred_at: { gt: disabledAt, lt: enabled.body.data.attributes.updated_at },
        },
      },
    });
    // The offer is a bulk job's attributes as they are.
    const job = await api.call('POST', '/bulk_jobs', {
      data: { type: 'bulk_job', attributes: enabled.body.meta.replay_offer },
    });
    expect(job.status).toBe(202);
    // Enabling what is enabled offers nothing.
    expect((await put({ enabled: true })).body.meta).toBeUndefined();
  });

  it('answers 404 NOT_FOUND for unknown or malformed ids', async ({ api }) => {
    for (const id of ['999999', 'abc', '0', '1e3', '99999999999999999999']) {
      for (const [method, path, body] of [
        ['GET', `/webhooks/${id}`],
        ['DELETE', `/webhooks/${id}`],
        ['POST', `/webhooks/${id}/rotate_secret`],
        ['PUT', `/webhooks/${id}`, { data: { type: 'webhook', attributes: { enabled: true } } }],
      ] as const) {
        const response = await api.call(method, path, body);
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(response.body.data[0].attributes.code).toBe('NOT_FOUND');
      }
    }
  });
});

describe('rotate_secret', () => {
  it('returns a new secret and keeps the old one valid for 24 hours', async ({ api, db }) => {
    const created = (await create(api, attributes())).body.data;
    const before = Date.now();
    const rotated = await api.call('POST', `/webhooks/${created.id}/rotate_secret`);
    expect(rotated.status).toBe(200);
    const secret = rotated.body.data.attributes.signing_secret;
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(created.attributes.signing_secret);

    const stored = (await findWebhook(db, created.id))!;
    expect(stored.signingSecret).toBe(secret);
    expect(stored.previousSigningSecret).toBe(created.attributes.signing_secret);
    const expires = stored.previousSecretExpiresAt!.getTime();
    expect(expires).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 5_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3600_000 + 5_000);
    expect(activeSigningSecrets(stored)).toEqual([secret, created.attributes.signing_secret]);
    expect(activeSigningSecrets(stored, new Date(expires + 1))).toEqual([secret]);
  });
});

describe('change notifications', () => {
  it('publishes the id and kind of every change, without secrets', async ({ api }) => {
    messages.length = 0;
    const created = (await create(api, attributes())).body.data;
    const id: string = created.id;
    await api.call('PUT', `/webhooks/${id}`, {
      data: { type: 'webhook', attributes: { enabled: false } },
    });
    await api.call('POST', `/webhooks/${id}/rotate_secret`);
    await api.call('DELETE', `/webhooks/${id}`);
    // Only this webhook's: an earlier test's publish may still arrive after the reset above.
    const ofThisWebhook = (): unknown[] =>
      messages.map((m) => JSON.parse(m) as { id: string }).filter((m) => m.id === id);
    await waitFor(() => expect(ofThisWebhook()).toHaveLength(4));
    expect(ofThisWebhook()).toEqual([
      { id, change: 'created' },
      { id, change: 'updated' },
      { id, change: 'secret_rotated' },
      { id, change: 'deleted' },
    ]);
    expect(messages.join()).not.toContain('whsec_');
  });

  it('uses a channel under the deployment prefix', ({ deps }) => {
    expect(webhooksChangedChannel(deps.redisPrefix)).toBe(`${deps.redisPrefix}:webhooks-changed`);
  });
});

describe('access', () => {
  it('is for admins only', async ({ api, db }) => {
    const readOnly = await createTestToken(db, 'read_only');
    const producer = await createTestToken(db, 'producer');
    for (const token of [readOnly, producer]) {
      for (const [method, path] of [
        ['GET', '/webhooks'],
        ['POST', '/webhooks'],
        ['GET', '/webhooks/1'],
        ['PUT', '/webhooks/1'],
        ['DELETE', '/webhooks/1'],
        ['POST', '/webhooks/1/rotate_secret'],
      ] as const) {
        const response = await api.as(token).call(method, path);
        expect(response.status, `${method} ${path}`).toBe(403);
        expect(response.body.data[0].attributes.code).toBe('INSUFFICIENT_PERMISSIONS');
      }
    }
    const anonymous = await api.as('not-a-token').call('GET', '/webhooks');
    expect(anonymous.status).toBe(401);
  });
});

describe('SSRF allow-list at creation', () => {
  it('accepts a loopback url only when SSRF_ALLOW_CIDRS lists it', async ({ api, db, redis }) => {
    const attrs = attributes({ url: 'http://127.0.0.1:8080/hook' });
    const refused = await create(api, attrs);
    expect(refused.status).toBe(422);
    expect(refused.body.data[0].attributes.details).toMatchObject({
      field: 'url',
      code: 'VALIDATION_FORMAT',
    });
    expect(refused.body.data[0].attributes.details.message).toMatch(/loopback/);

    const allowing = await serve(
      createApp({
        ...testDeps(db, redis),
        ssrfAllowCidrs: parseCidrList('127.0.0.0/8,::1/128'),
      }),
    );
    try {
      const allowingApi = testApi(allowing.url, api.token);
      const response = await create(allowingApi, attrs);
      expect(response.status).toBe(201);
      const stillRefused = await create(allowingApi, attributes({ url: 'http://10.0.0.1/' }));
      expect(stillRefused.status).toBe(422);
    } finally {
      await allowing.close();
    }
  });
});
