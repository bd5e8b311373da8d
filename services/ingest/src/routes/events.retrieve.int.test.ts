import { describe, expect } from 'vitest';
import {
  createTestWebhookCall,
  createWebhookCalls,
  findEvent,
  insertEvents,
  insertWebhook,
  recordWebhookCallAttempts,
  type WebhookCallAttempt,
} from '@herald/store';
import { createTestToken, testAttempt, testItemEvent, testWebhookInput } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// GET /events/:id (docs/api.md, GET /events/:id): an event with its bodies and its calls.
const it = appTest(createApp);

const entity = {
  type: 'item',
  id: 'rec-1',
  attributes: { title: 'Published' },
  relationships: { item_type: { data: { type: 'item_type', id: 'post' } } },
};
const previous = { ...entity, attributes: { title: 'Draft' } };
const related = [{ type: 'item_type', id: 'post', attributes: { api_key: 'post' } }];

describe('GET /events/:id', () => {
  it('gives the event with its bodies, and each call of it in `included`', async ({ api, db }) => {
    await insertEvents(db, [
      testItemEvent('evt-calls', {
        entityId: 'rec-1',
        eventType: 'publish',
        entity,
        previousEntity: previous,
        relatedEntities: related,
        occurredAt: new Date('2026-03-01T10:00:00Z'),
      }),
    ]);
    const [indexer, cache] = [
      await insertWebhook(db, testWebhookInput()),
      await insertWebhook(db, testWebhookInput()),
    ];
    const made = await createWebhookCalls(db, [
      {
        event: { id: 'evt-calls', entityType: 'item', eventType: 'publish' },
        webhookIds: [indexer.id, cache.id],
      },
    ]);
    const [delivered, waiting] = made;
    const sentAt = new Date('2026-03-01T10:00:01Z');
    const retryAt = new Date('2026-03-01T10:02:01Z');
    await recordWebhookCallAttempts(db, [
      {
        id: delivered!.id,
        attempt: attempt({ status: 'success', responseStatus: 200, lastSentAt: sentAt }),
      },
      {
        id: waiting!.id,
        attempt: attempt({
          status: 'rescheduled',
          responseStatus: 503,
          failureReason: 'HTTP 503',
          lastSentAt: sentAt,
          nextRetryAt: retryAt,
        }),
      },
    ]);
    // A test send that carries a copy of the event is not one of its calls.
    await createTestWebhookCall(db, indexer.id, (await findEvent(db, 'evt-calls'))!);

    const response = await api.call('GET', '/events/evt-calls');
    expect(response.status).toBe(200);
    const { data, included } = response.body;
    expect(data).toEqual({
      type: 'event',
      id: 'evt-calls',
      attributes: {
        environment: 'main',
        entity_type: 'item',
        event_type: 'publish',
        entity_id: 'rec-1',
        item_type_id: 'post',
        item_type_api_key: 'post',
        occurred_at: '2026-03-01T10:00:00.000Z',
        accepted_at: expect.any(String),
        matched_at: expect.any(String),
        entity,
        previous_entity: previous,
        related_entities: related,
      },
      relationships: {
        webhook_calls: {
          data: [
            { type: 'webhook_call', id: delivered!.id },
            { type: 'webhook_call', id: waiting!.id },
          ],
        },
      },
    });
    expect(included).toEqual([
      {
        type: 'webhook_call',
        id: delivered!.id,
        attributes: {
          status: 'success',
          created_at: expect.any(String),
          attempts_count: 1,
          attempted_auto_retries_count: 0,
          last_sent_at: sentAt.toISOString(),
          next_retry_at: null,
          response_status: 200,
          failure_reason: null,
        },
        relationships: { webhook: { data: { type: 'webhook', id: indexer.id } } },
      },
      {
        type: 'webhook_call',
        id: waiting!.id,
        attributes: {
          status: 'rescheduled',
          created_at: expect.any(String),
          attempts_count: 1,
          attempted_auto_retries_count: 0,
          last_sent_at: sentAt.toISOString(),
          next_retry_at: retryAt.toISOString(),
          response_status: 503,
          failure_reason: 'HTTP 503',
        },
        relationships: { webhook: { data: { type: 'webhook', id: cache.id } } },
      },
    ]);
  });

  it('an event not matched yet: no calls, no matched_at, previous_entity null', async ({
    api,
    db,
  }) => {
    await insertEvents(db, [testItemEvent('evt-alone')]);
    const response = await api.call('GET', '/events/evt-alone');
    expect(response.status).toBe(200);
    expect(response.body.data.attributes).toMatchObject({
      matched_at: null,
      previous_entity: null,
      related_entities: [],
      entity: { type: 'item', id: 'r1' },
    });
    expect(response.body.data.relationships).toEqual({ webhook_calls: { data: [] } });
    expect(response.body.included).toEqual([]);
  });

  it('gives an event a producer posted, as it was sent', async ({ api, db }) => {
    const producer = api.as(await createTestToken(db, 'producer'));
    const sent = {
      type: 'upload',
      id: 'up-9',
      attributes: { filename: 'photo.jpg', size: 1024 },
      meta: { created_at: '2026-03-02T00:00:00Z' },
    };
    const posted = await producer.call('POST', '/events', {
      data: {
        type: 'event',
        id: 'evt:posted.1',
        attributes: { entity_type: 'upload', event_type: 'create', entity: sent },
      },
    });
    expect(posted.status).toBe(202);
    const response = await api.call('GET', '/events/evt:posted.1');
    expect(response.status).toBe(200);
    expect(response.body.data.attributes).toMatchObject({
      entity_type: 'upload',
      event_type: 'create',
      entity_id: 'up-9',
      entity: sent,
    });
  });

  it('404 NOT_FOUND for unknown and impossible ids, never a 500', async ({ api }) => {
    for (const path of [
      'nope',
      'a'.repeat(128),
      'a'.repeat(129),
      'x'.repeat(8000),
      encodeURIComponent('événement-😀'),
      'a%2Fb',
      'a%2F..%2Fb',
      '%20',
      '%00',
      'a%3Fb',
    ]) {
      const response = await api.call('GET', `/events/${path}`);
      expect(response.status, path).toBe(404);
      expect(response.body.data[0].attributes.code, path).toBe('NOT_FOUND');
    }
  });

  it('is for admins only', async ({ api, db }) => {
    await insertEvents(db, [testItemEvent('evt-private')]);
    for (const role of ['read_only', 'producer'] as const) {
      const response = await api
        .as(await createTestToken(db, role))
        .call('GET', '/events/evt-private');
      expect(response.status, role).toBe(403);
    }
  });
});

/** An attempt's outcome as the deliver worker records it. */
function attempt(
  outcome: Pick<WebhookCallAttempt, 'status' | 'responseStatus' | 'lastSentAt'> &
    Partial<WebhookCallAttempt>,
): WebhookCallAttempt {
  return testAttempt(outcome);
}
