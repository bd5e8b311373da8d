import { describe, expect } from 'vitest';
import { ApiError, buildClient } from '@datocms/cma-client-node';
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

  it('webhooks.destroy', async ({ client }) => {
    const webhook = await client.webhooks.destroy(id);
    expect(webhook).toMatchObject({ id, name: 'Renamed' });
    const error = await client.webhooks.find(id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).errors[0]!.attributes.code).toBe('NOT_FOUND');
  });
});
