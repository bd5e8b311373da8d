import { describe, expect } from 'vitest';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

/** The single process's embedded PostgreSQL (18) runs the same routes: same SQL, same answers. */
const it = appTest(createApp, { db: 'embedded' });

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

describe('webhooks on the embedded PostgreSQL', () => {
  it('creates, refuses a duplicate name, lists, rotates, updates and destroys', async ({ api }) => {
    const created = await api.call('POST', '/webhooks', { data: { type: 'webhook', attributes } });
    expect(created.status).toBe(201);
    expect(JSON.stringify(created.body.data.attributes.headers)).toBe('{"X-B":"1","X-A":"2"}');
    expect(created.body.data.attributes.events).toEqual(attributes.events);
    const id: string = created.body.data.id;

    const duplicate = await api.call('POST', '/webhooks', {
      data: { type: 'webhook', attributes },
    });
    expect(duplicate.status).toBe(422);
    expect(duplicate.body.data[0].attributes.details).toMatchObject({
      field: 'name',
      code: 'VALIDATION_UNIQUENESS',
    });

    const rotated = await api.call('POST', `/webhooks/${id}/rotate_secret`);
    expect(rotated.body.data.attributes.signing_secret).not.toBe(
      created.body.data.attributes.signing_secret,
    );
    const updated = await api.call('PUT', `/webhooks/${id}`, {
      data: { type: 'webhook', attributes: { auto_retry: false } },
    });
    expect(updated.body.data.attributes.auto_retry).toBe(false);
    const list = await api.call('GET', '/webhooks');
    expect(list.body.data).toEqual([updated.body.data]);
    expect((await api.call('DELETE', `/webhooks/${id}`)).status).toBe(200);
    expect((await api.call('GET', '/webhooks')).body.data).toEqual([]);
  });
});
