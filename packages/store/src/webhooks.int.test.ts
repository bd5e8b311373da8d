import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '@herald/testkit';
import { sqlState } from './db.js';
import {
  activeSigningSecrets,
  deleteWebhook,
  disableWebhook,
  findWebhook,
  findWebhooks,
  insertWebhook,
  listWebhookVersions,
  listEnabledWebhooks,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookInput,
} from './webhooks.js';

const input = (name: string): WebhookInput => ({
  name,
  url: 'https://example.com/hook',
  enabled: true,
  headers: { 'X-Zeta': '1', Authorization: 'Bearer x', 'X-A': '2' },
  events: [
    {
      entity_type: 'item',
      event_types: ['publish'],
      filters: [{ entity_type: 'item_type', entity_ids: ['article'] }],
    },
    { entity_type: 'item', event_types: ['update'], filter: null },
  ],
  customPayload: null,
  httpBasicUser: 'user',
  httpBasicPassword: 'secret',
  payloadApiVersion: '3',
  nestedItemsInPayload: false,
  autoRetry: true,
  redactHeaders: [],
  deliveryPolicy: {},
  payloadChanges: false,
});

describe.each(['postgres', 'embedded'] as const)('webhooks repository on %s', (kind) => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await createTestDb(kind);
  });
  afterAll(async () => {
    await testDb.cleanup();
  });

  it('stores, finds and lists webhooks with their secrets, json kept as sent', async () => {
    const created = await insertWebhook(testDb.db, input('a'));
    expect(created.id).toMatch(/^\d+$/);
    expect(created.signingSecret).toMatch(/^whsec_/);
    const found = (await findWebhook(testDb.db, created.id))!;
    expect(found).toEqual(created);
    expect(Object.keys(found.headers)).toEqual(['X-Zeta', 'Authorization', 'X-A']);
    expect(JSON.stringify(found.events)).toBe(JSON.stringify(input('a').events));
    expect(found.createdAt).toBeInstanceOf(Date);
    expect((await listWebhooks(testDb.db)).map((w) => w.id)).toContain(created.id);
    expect(await findWebhook(testDb.db, 'nope')).toBeNull();
    expect(
      (await findWebhooks(testDb.db, [created.id, 'nope', '999999'])).map((w) => w.id),
    ).toEqual([created.id]);
  });

  it('bumps the version on every update, whoever writes', async () => {
    const created = await insertWebhook(testDb.db, input('versioned'));
    expect(created.version).toBe(1);
    expect((await updateWebhook(testDb.db, created.id, { enabled: false }))!.version).toBe(2);
    expect((await rotateWebhookSecret(testDb.db, created.id, 1000))!.version).toBe(3);
    await testDb.db.query('UPDATE webhooks SET url = $2 WHERE id = $1', [
      created.id,
      'https://y.test/',
    ]);
    const versions = await listWebhookVersions(testDb.db);
    expect(versions.find((v) => v.id === created.id)).toEqual({ id: created.id, version: 4 });
  });

  it('refuses a duplicate name with a unique violation', async () => {
    await insertWebhook(testDb.db, input('dup'));
    const error = await insertWebhook(testDb.db, input('dup')).catch((e: unknown) => e);
    expect(sqlState(error)).toBe('23505');
  });

  it('updates a subset, disables, lists enabled ones, rotates and deletes', async () => {
    const created = await insertWebhook(testDb.db, input('b'));
    const updated = (await updateWebhook(testDb.db, created.id, {
      url: 'https://x.test/',
      headers: {},
    }))!;
    expect(updated).toMatchObject({ url: 'https://x.test/', headers: {}, name: 'b' });
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(created.updatedAt.getTime());

    const disabled = (await disableWebhook(testDb.db, created.id, 'endpoint answered 410'))!;
    expect(disabled).toMatchObject({ enabled: false, disabledReason: 'endpoint answered 410' });
    expect((await listEnabledWebhooks(testDb.db)).map((w) => w.id)).not.toContain(created.id);
    const enabled = (await updateWebhook(testDb.db, created.id, { enabled: true }))!;
    expect(enabled).toMatchObject({ enabled: true, disabledReason: null });
    expect((await listEnabledWebhooks(testDb.db)).map((w) => w.id)).toContain(created.id);

    const rotated = (await rotateWebhookSecret(testDb.db, created.id, 60_000))!;
    expect(rotated.previousSigningSecret).toBe(created.signingSecret);
    expect(activeSigningSecrets(rotated)).toEqual([rotated.signingSecret, created.signingSecret]);
    const expiry = rotated.previousSecretExpiresAt!.getTime();
    expect(expiry - Date.now()).toBeGreaterThan(50_000);
    expect(expiry - Date.now()).toBeLessThan(70_000);

    expect((await deleteWebhook(testDb.db, created.id))!.id).toBe(created.id);
    expect(await deleteWebhook(testDb.db, created.id)).toBeNull();
    expect(await updateWebhook(testDb.db, created.id, { enabled: false })).toBeNull();
    expect(await rotateWebhookSecret(testDb.db, created.id, 1)).toBeNull();
  });
});
