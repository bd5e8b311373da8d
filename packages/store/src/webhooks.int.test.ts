import { describe, expect } from 'vitest';
import { testWebhookInput } from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import { sqlState } from './db.js';
import { findEventsToMatch } from './events.js';
import {
  activeSigningSecrets,
  deleteWebhook,
  disableWebhook,
  findWebhook,
  findWebhooks,
  insertWebhook,
  listWebhookVersions,
  listWebhooks,
  readWebhookIndex,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookInput,
} from './webhooks.js';

const input = (name: string): WebhookInput =>
  testWebhookInput({
    name,
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
  });

// File-scoped fixtures are made at the top level: a database of each kind.
const tests = { postgres: integrationTest(), embedded: integrationTest({ db: 'embedded' }) };

describe.each(['postgres', 'embedded'] as const)('webhooks repository on %s', (kind) => {
  const it = tests[kind];

  it('stores, finds and lists webhooks with their secrets, json kept as sent', async ({ db }) => {
    const created = await insertWebhook(db, input('a'));
    expect(created.id).toMatch(/^\d+$/);
    expect(created.signingSecret).toMatch(/^whsec_/);
    const found = (await findWebhook(db, created.id))!;
    expect(found).toEqual(created);
    expect(Object.keys(found.headers)).toEqual(['X-Zeta', 'Authorization', 'X-A']);
    expect(JSON.stringify(found.events)).toBe(JSON.stringify(input('a').events));
    expect(found.createdAt).toBeInstanceOf(Date);
    expect((await listWebhooks(db)).map((w) => w.id)).toContain(created.id);
    expect(await findWebhook(db, 'nope')).toBeNull();
    expect((await findWebhooks(db, [created.id, 'nope', '999999'])).map((w) => w.id)).toEqual([
      created.id,
    ]);
  });

  it('bumps the version on every update, whoever writes', async ({ db }) => {
    const created = await insertWebhook(db, input('versioned'));
    expect(created.version).toBe(1);
    expect((await updateWebhook(db, created.id, { enabled: false }))!.version).toBe(2);
    expect((await rotateWebhookSecret(db, created.id, 1000))!.version).toBe(3);
    await db.query('UPDATE webhooks SET url = $2 WHERE id = $1', [created.id, 'https://y.test/']);
    const versions = await listWebhookVersions(db);
    expect(versions.find((v) => v.id === created.id)).toEqual({ id: created.id, version: 4 });
  });

  it('moves the webhooks generation with every change, read with the index and the events', async ({
    db,
  }) => {
    const generation = async () => (await readWebhookIndex(db)).generation;
    const start = await generation();
    const created = await insertWebhook(db, input('generation'));
    const afterInsert = await readWebhookIndex(db);
    expect(afterInsert.generation).toBeGreaterThan(start);
    expect(afterInsert.webhooks.map((w) => w.id)).toContain(created.id);
    await updateWebhook(db, created.id, { url: 'https://g.test/' });
    expect(await generation()).toBeGreaterThan(afterInsert.generation);
    const beforeDelete = await generation();
    await deleteWebhook(db, created.id);
    expect(await generation()).toBeGreaterThan(beforeDelete);
    // An event read for its match carries the generation of the same snapshot.
    await db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity)
       VALUES ($1, 'main', true, 'item', 'create', 'rec', now(), '{}')`,
      ['evt-generation'],
    );
    const { events, webhooksGeneration } = await findEventsToMatch(db, ['evt-generation']);
    expect(events.map((e) => e.id)).toEqual(['evt-generation']);
    expect(webhooksGeneration).toBe(await generation());
  });

  it('refuses a duplicate name with a unique violation', async ({ db }) => {
    await insertWebhook(db, input('dup'));
    const error = await insertWebhook(db, input('dup')).catch((e: unknown) => e);
    expect(sqlState(error)).toBe('23505');
  });

  it('updates a subset, disables, lists enabled ones, rotates and deletes', async ({ db }) => {
    const created = await insertWebhook(db, input('b'));
    const updated = (await updateWebhook(db, created.id, {
      url: 'https://x.test/',
      headers: {},
    }))!;
    expect(updated).toMatchObject({ url: 'https://x.test/', headers: {}, name: 'b' });
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(created.updatedAt.getTime());

    const disabled = (await disableWebhook(db, created.id, 'endpoint answered 410'))!;
    expect(disabled).toMatchObject({ enabled: false, disabledReason: 'endpoint answered 410' });
    const indexed = async () => (await readWebhookIndex(db)).webhooks.map((w) => w.id);
    expect(await indexed()).not.toContain(created.id);
    const enabled = (await updateWebhook(db, created.id, { enabled: true }))!;
    expect(enabled).toMatchObject({ enabled: true, disabledReason: null });
    expect(await indexed()).toContain(created.id);

    const rotated = (await rotateWebhookSecret(db, created.id, 60_000))!;
    expect(rotated.previousSigningSecret).toBe(created.signingSecret);
    expect(activeSigningSecrets(rotated)).toEqual([rotated.signingSecret, created.signingSecret]);
    const expiry = rotated.previousSecretExpiresAt!.getTime();
    expect(expiry - Date.now()).toBeGreaterThan(50_000);
    expect(expiry - Date.now()).toBeLessThan(70_000);

    expect((await deleteWebhook(db, created.id))!.id).toBe(created.id);
    expect(await deleteWebhook(db, created.id)).toBeNull();
    expect(await updateWebhook(db, created.id, { enabled: false })).toBeNull();
    expect(await rotateWebhookSecret(db, created.id, 1)).toBeNull();
  });
});
