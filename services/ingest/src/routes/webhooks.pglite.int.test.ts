import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDb,
  createTestToken,
  serve,
  testDeps,
  testRedis,
  type TestDb,
  type TestServer,
} from '@herald/testkit';
import type { Redis } from '@herald/runtime';
import { createApp } from '../app.js';

/** The embedded mode runs the same routes on PGlite: same SQL, same answers. */

let testDb: TestDb;
let redis: Redis;
let server: TestServer;
let admin: string;

beforeAll(async () => {
  testDb = await createTestDb('pglite');
  redis = testRedis();
  server = await serve(createApp(testDeps(testDb.db, redis)));
  admin = await createTestToken(testDb.db, 'admin');
});

afterAll(async () => {
  await server.close();
  await redis.quit();
  await testDb.cleanup();
});

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

const attributes = {
  name: 'embedded',
  url: 'https://example.com/hook',
  headers: { 'X-B': '1', 'X-A': '2' },
  events: [
    {
      entity_type: 'item',
      event_types: ['publish'],
      filter: { entity_type: 'item_type', entity_ids: ['article'] },
    },
  ],
  custom_payload: null,
  http_basic_user: null,
  http_basic_password: null,
};

describe('webhooks on PGlite', () => {
  it('creates, refuses a duplicate name, lists, rotates, updates and destroys', async () => {
    const created = await call('POST', '/webhooks', { data: { type: 'webhook', attributes } });
    expect(created.status).toBe(201);
    expect(JSON.stringify(created.body.data.attributes.headers)).toBe('{"X-B":"1","X-A":"2"}');
    expect(created.body.data.attributes.events).toEqual(attributes.events);
    const id: string = created.body.data.id;

    const duplicate = await call('POST', '/webhooks', { data: { type: 'webhook', attributes } });
    expect(duplicate.status).toBe(422);
    expect(duplicate.body.data[0].attributes.details).toMatchObject({
      field: 'name',
      code: 'VALIDATION_UNIQUENESS',
    });

    const rotated = await call('POST', `/webhooks/${id}/rotate_secret`);
    expect(rotated.body.data.attributes.signing_secret).not.toBe(
      created.body.data.attributes.signing_secret,
    );
    const updated = await call('PUT', `/webhooks/${id}`, {
      data: { type: 'webhook', attributes: { auto_retry: false } },
    });
    expect(updated.body.data.attributes.auto_retry).toBe(false);
    const list = await call('GET', '/webhooks');
    expect(list.body.data).toEqual([updated.body.data]);
    expect((await call('DELETE', `/webhooks/${id}`)).status).toBe(200);
    expect((await call('GET', '/webhooks')).body.data).toEqual([]);
  });
});
