import { describe, expect } from 'vitest';
import { ApiError, buildClient } from '@datocms/cma-client-node';
import { createWebhookCalls } from '@herald/store';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

/** The official DatoCMS client against a served Herald: the judge of wire compatibility. */
const it = appTest(createApp).extend('client', ({ api }) =>
  buildClient({
    apiToken: api.token,
    baseUrl: api.url,
    // A failure must surface, not be retried into a timeout.
    autoRetry: false,
  }),
);

// The example body of DatoCMS's "Create a webhook" documentation.
const docsExample = {
  name: 'Item type creation/update',
  url: 'https://www.example.com/webhook',
  headers: { 'X-Foo': 'Bar' },
  events: [
    {
      entity_type: 'item_type' as const,
      event_types: ['create' as const, 'update' as const],
    },
  ],
  http_basic_user: 'user',
  http_basic_password: 'password',
  custom_payload:
    '{ "message": "{{event_type}} event triggered on {{entity_type}}!", "entity_id": "{{#entity}}{{id}}{{/entity}}"] }',
  enabled: true,
  payload_api_version: '3',
  nested_items_in_payload: true,
};

describe('@datocms/cma-client-node', () => {
  let id: string;

  it('webhooks.create with the documentation example', async ({ client }) => {
    const webhook = await client.webhooks.create(docsExample);
    expect(webhook).toMatchObject({ type: 'webhook', ...docsExample, auto_retry: true });
    expect(webhook.id).toMatch(/^\d+$/);
    id = webhook.id;
  });

  it('webhooks.create with filters (DatoCMS shape)', async ({ client }) => {
    const webhook = await client.webhooks.create({
      name: 'Article publication',
      url: 'https://www.example.com/publish',
      headers: {},
      events: [
        {
          entity_type: 'item',
          event_types: ['publish', 'unpublish'],
          filters: [{ entity_type: 'item_type', entity_ids: ['article'] }],
        },
      ],
      custom_payload: null,
      http_basic_user: null,
      http_basic_password: null,
    });
    expect(webhook.events).toEqual([
      {
        entity_type: 'item',
        event_types: ['publish', 'unpublish'],
        filters: [{ entity_type: 'item_type', entity_ids: ['article'] }],
      },
    ]);
  });

  it('webhooks.list', async ({ client }) => {
    const webhooks = await client.webhooks.list();
    expect(webhooks.map((w) => w.name)).toEqual([
      'Item type creation/update',
      'Article publication',
    ]);
  });

  it('webhooks.find', async ({ client }) => {
    const webhook = await client.webhooks.find(id);
    expect(webhook).toMatchObject({ id, ...docsExample });
  });

  it('webhooks.update', async ({ client }) => {
    const webhook = await client.webhooks.update(id, { enabled: false, name: 'Renamed' });
    expect(webhook).toMatchObject({ id, enabled: false, name: 'Renamed', url: docsExample.url });
    expect((await client.webhooks.find(id)).name).toBe('Renamed');
  });

  it('an ApiError with INVALID_FIELD for a duplicate name', async ({ client }) => {
    const error = await client.webhooks
      .create({ ...docsExample, name: 'Article publication' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expect(apiError.response.status).toBe(422);
    expect(apiError.errors[0]!.attributes.code).toBe('INVALID_FIELD');
    expect(apiError.errors[0]!.attributes.details).toMatchObject({
      field: 'name',
      code: 'VALIDATION_UNIQUENESS',
    });
    expect(apiError.findError('INVALID_FIELD', { field: 'name' })).toBeDefined();
  });

  it('webhookCalls.list, rawList and listPagedIterator', async ({ client, db }) => {
    const webhook = await client.webhooks.create({ ...docsExample, name: 'Logged' });
    const events = ['log-1', 'log-2', 'log-3', 'log-4', 'log-5'];
    await db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity)
       SELECT id, 'main', true, 'item', 'update', 'log-entity', now(), '{}'
       FROM unnest($1::text[]) AS id`,
      [events],
    );
    await createWebhookCalls(
      db,
      events.map((id) => ({
        event: { id, entityType: 'item', eventType: 'update' },
        webhookIds: [webhook.id],
      })),
    );
    const filter = { fields: { webhook_id: { eq: webhook.id } } };
    const page = await client.webhookCalls.list({ filter, page: { limit: 2 } });
    expect(page.map((call) => [call.type, call.webhook])).toEqual([
      ['webhook_call', { type: 'webhook', id: webhook.id }],
      ['webhook_call', { type: 'webhook', id: webhook.id }],
    ]);
    const raw = await client.webhookCalls.rawList({ filter, page: { limit: 2 } });
    expect(raw.meta.total_count).toBe(5);
    // The included webhook has every attribute the client types, its password as `***`.
    expect(
      raw.included.map((hook) => [
        hook.type,
        hook.id,
        hook.attributes.name,
        hook.attributes.http_basic_user,
        hook.attributes.http_basic_password,
      ]),
    ).toEqual([['webhook', webhook.id, 'Logged', 'user', '***']]);
    // Every call once, in order, through pages fetched concurrently by offset.
    const iterated: string[] = [];
    for await (const call of client.webhookCalls.listPagedIterator(
      { filter },
      { perPage: 2, concurrency: 3 },
    )) {
      iterated.push(call.id);
    }
    const all = await client.webhookCalls.list({ filter, page: { limit: 10 } });
    expect(all).toHaveLength(5);
    expect(iterated).toEqual(all.map((call) => call.id));
  });

  it('webhooks.destroy', async ({ client }) => {
    const webhook = await client.webhooks.destroy(id);
    expect(webhook).toMatchObject({ id, name: 'Renamed' });
    const error = await client.webhooks.find(id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).errors[0]!.attributes.code).toBe('NOT_FOUND');
  });
});
