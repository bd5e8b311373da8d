import { describe, expect } from 'vitest';
import { parseCidrList } from '@herald/contract';
import { findWebhook } from '@herald/store';
import { testWebhookAttributes, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// Broker destinations (docs/api.md, Destinations): validated at creation, credentials write-only.
const it = appTest(createApp, { deps: () => ({ ssrfAllowCidrs: parseCidrList('127.0.0.0/8') }) });

/** POST /webhooks with a valid webhook's attributes and `destination`. */
const create = (api: TestApi, destination: unknown) =>
  api.call('POST', '/webhooks', {
    data: { type: 'webhook', attributes: testWebhookAttributes({ destination }) },
  });

describe('the destination attribute', () => {
  it('defaults to http', async ({ api }) => {
    const response = await create(api, undefined);
    expect(response.status).toBe(201);
    expect(response.body.data.attributes.destination).toEqual({ kind: 'http' });
  });

  it('stores a broker destination and never shows its credentials', async ({ api, deps }) => {
    const response = await create(api, {
      kind: 'rabbitmq',
      url: 'amqp://herald:s3cret-in-url@127.0.0.1:5672/vhost',
      exchange: 'changes',
      routing_key: 'items',
      password: 'field-secret',
    });
    expect(response.status).toBe(201);
    const { id, attributes } = response.body.data;
    expect(attributes.destination).toEqual({
      kind: 'rabbitmq',
      url: 'amqp://herald:***@127.0.0.1:5672/vhost',
      exchange: 'changes',
      routing_key: 'items',
      username: null,
      password: '***',
    });
    const shown = await api.call('GET', `/webhooks/${id}`);
    expect(JSON.stringify(shown.body)).not.toMatch(/s3cret-in-url|field-secret/);
    const stored = await findWebhook(deps.db, id);
    expect(stored!.destination).toMatchObject({
      url: 'amqp://herald:s3cret-in-url@127.0.0.1:5672/vhost',
      password: 'field-secret',
    });
  });

  it('an update that sends back the shown destination keeps its credentials', async ({
    api,
    deps,
  }) => {
    const created = await create(api, {
      kind: 'redis_stream',
      url: 'redis://:url-secret@127.0.0.1:6379/0',
      stream: 'changes',
      username: 'herald',
      password: 'field-secret',
    });
    const { id, attributes } = created.body.data;
    const shown = { ...attributes.destination, stream: 'renamed' };
    const updated = await api.call('PUT', `/webhooks/${id}`, {
      data: { type: 'webhook', id, attributes: { destination: shown } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data.attributes.destination).toEqual(shown);
    const stored = await findWebhook(deps.db, id);
    expect(stored!.destination).toMatchObject({
      url: 'redis://:url-secret@127.0.0.1:6379/0',
      password: 'field-secret',
      stream: 'renamed',
    });
  });

  it('fills the defaults of nats and redis_stream', async ({ api }) => {
    const nats = await create(api, { kind: 'nats', url: 'nats://127.0.0.1:4222', subject: 'a.b' });
    expect(nats.body.data.attributes.destination).toMatchObject({ jetstream: true });
    const stream = await create(api, {
      kind: 'redis_stream',
      url: 'redis://127.0.0.1:6379/0',
      stream: 'changes',
    });
    expect(stream.body.data.attributes.destination).toMatchObject({ max_len: 10_000 });
  });

  const refused: [string, unknown, string][] = [
    ['an unknown kind', { kind: 'kafka' }, 'destination.kind'],
    [
      'a URL of another scheme',
      { kind: 'rabbitmq', url: 'http://127.0.0.1', exchange: 'x' },
      'destination.url',
    ],
    ['a URL that does not parse', { kind: 'mqtt', url: 'mqtt://', topic: 't' }, 'destination.url'],
    [
      'an empty exchange',
      { kind: 'rabbitmq', url: 'amqp://127.0.0.1', exchange: '' },
      'destination.exchange',
    ],
    [
      'an empty subject',
      { kind: 'nats', url: 'nats://127.0.0.1', subject: '' },
      'destination.subject',
    ],
    [
      'a wildcard subject',
      { kind: 'nats', url: 'nats://127.0.0.1', subject: 'a.*' },
      'destination.subject',
    ],
    ['an empty topic', { kind: 'mqtt', url: 'mqtt://127.0.0.1', topic: '' }, 'destination.topic'],
    [
      'a cap out of range',
      { kind: 'redis_stream', url: 'redis://127.0.0.1', stream: 's', max_len: 0 },
      'destination.max_len',
    ],
    [
      'a key of another kind',
      { kind: 'mqtt', url: 'mqtt://127.0.0.1', topic: 't', exchange: 'x' },
      'destination.exchange',
    ],
    ['not an object', 'amqp://127.0.0.1', 'destination'],
  ];
  it.for(refused)(
    'refuses %s with a 422 naming the field',
    async ([, destination, field], { api }) => {
      const response = await create(api, destination);
      expect(response.status).toBe(422);
      const fields = (response.body.data as { attributes: { details: { field?: string } } }[]).map(
        (error) => error.attributes.details.field,
      );
      expect(fields).toContain(field);
    },
  );
});
