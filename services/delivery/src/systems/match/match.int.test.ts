import { describe, expect } from 'vitest';
import { parseCidrList, type WebhookEventEntry } from '@herald/contract';
import type { Queue } from 'bullmq';
import { findEvent, insertEvents, type Db, type NewEvent } from '@herald/store';
import { createTestDb, randomId, startReceiver, waitFor } from '@herald/testkit';
import {
  COORDINATION_MODES,
  addWebhook,
  type CoordinationMode,
  emitEvents,
  itemEvent,
  itemEventsIn,
  pipelineTest,
  startPipeline,
  waitForCall,
  webhookInput,
} from '../../harness.test-support.js';

const withUpdates = (mode: CoordinationMode) =>
  pipelineTest({}, mode).extend('updates', async ({ pipeline, receiver }) => {
    // A webhook on item updates in an environment of the test's own.
    const env = randomId('env');
    const input = webhookInput(receiver.url, { events: itemEventsIn(env, ['update']) });
    return { env, webhook: await pipeline.addWebhook(input) };
  });
// File-scoped fixtures are made at the top level: a pipeline (and database) per mode.
const tests = { redis: withUpdates('redis'), postgres: withUpdates('postgres') };

/** The webhooks (by name) whose calls the events produced, once every event is matched. */
async function matchedNames(
  db: Db,
  events: NewEvent[],
  names: Map<string, string>,
): Promise<string[][]> {
  await waitFor(async () => {
    for (const event of events) {
      if (!(await findEvent(db, event.id))?.matchedAt) throw new Error('not matched yet');
    }
  }, 10_000);
  return Promise.all(
    events.map(async (event) => {
      const { rows } = await db.query<{ webhook_id: string }>(
        'SELECT webhook_id FROM webhook_calls WHERE event_id = $1',
        [event.id],
      );
      return rows.map((r) => names.get(r.webhook_id) ?? '?').sort();
    }),
  );
}

describe.each(COORDINATION_MODES)('%s', (mode) => {
  const it = tests[mode];

  describe('matching (docs/api.md, Events and filters)', () => {
    it('applies every filter kind, ANDs filters, ORs ids, and honours entity and event types', async ({
      db,
      pipeline,
      receiver,
    }) => {
      const env = randomId('env');
      const sandbox = randomId('sandbox');
      const rec = randomId('rec');
      const entry = (
        entity_type: WebhookEventEntry['entity_type'],
        event_types: string[],
        filters: WebhookEventEntry['filters'] = [],
      ): WebhookEventEntry => ({
        entity_type,
        event_types,
        filters: [{ entity_type: 'environment', entity_ids: [env, sandbox] }, ...(filters ?? [])],
      });
      const specs: Record<string, WebhookEventEntry[]> = {
        all_item_publish: [entry('item', ['publish'])],
        by_item: [
          entry(
            'item',
            ['publish', 'update'],
            [{ entity_type: 'item', entity_ids: [rec, 'other'] }],
          ),
        ],
        by_model_id: [
          entry('item', ['publish'], [{ entity_type: 'item_type', entity_ids: ['m-1'] }]),
        ],
        by_model_key: [
          entry('item', ['publish'], [{ entity_type: 'item_type', entity_ids: ['article'] }]),
        ],
        primary_only: [
          entry(
            'item',
            ['publish'],
            [{ entity_type: 'environment_type', entity_ids: ['primary'] }],
          ),
        ],
        sandbox_only: [
          entry(
            'item',
            ['publish'],
            [{ entity_type: 'environment_type', entity_ids: ['sandbox'] }],
          ),
        ],
        model_and_item: [
          entry(
            'item',
            ['publish'],
            [
              { entity_type: 'item_type', entity_ids: ['article'] },
              { entity_type: 'item', entity_ids: ['nope'] },
            ],
          ),
        ],
        model_events: [
          entry('item_type', ['update'], [{ entity_type: 'item_type', entity_ids: ['article'] }]),
        ],
        build: [
          entry(
            'build_trigger',
            ['deploy_succeeded'],
            [{ entity_type: 'build_trigger', entity_ids: ['bt-1'] }],
          ),
        ],
        seed_filter_shape: [
          {
            entity_type: 'item',
            event_types: ['unpublish'],
            filter: { entity_type: 'environment', entity_ids: [sandbox] },
          },
        ],
      };
      const names = new Map<string, string>();
      for (const [name, events] of Object.entries(specs)) {
        const webhook = await pipeline.addWebhook(
          webhookInput(receiver.url, { name: `${name}-${env}`, events }),
        );
        names.set(webhook.id, name);
      }
      // A disabled webhook gets no calls.
      const disabled = await pipeline.addWebhook(
        webhookInput(receiver.url, { enabled: false, events: [entry('item', ['publish'])] }),
      );
      names.set(disabled.id, 'disabled');

      const publish = (overrides: Partial<NewEvent>) =>
        itemEvent({
          environment: env,
          eventType: 'publish',
          itemTypeId: 'm-1',
          itemTypeApiKey: 'article',
          ...overrides,
        });
      const events: NewEvent[] = [
        publish({ entityId: rec }),
        publish({ entityId: randomId('rec'), itemTypeId: 'm-2', itemTypeApiKey: 'page' }),
        publish({ environment: sandbox, isEnvironmentPrimary: false }),
        itemEvent({ environment: env, eventType: 'update', entityId: rec }),
        itemEvent({ environment: sandbox, isEnvironmentPrimary: false, eventType: 'unpublish' }),
        itemEvent({
          environment: env,
          entityType: 'item_type',
          eventType: 'update',
          entityId: 'm-1',
          itemTypeId: 'm-1',
          itemTypeApiKey: 'article',
          entity: { type: 'item_type', id: 'm-1', attributes: { api_key: 'article' } },
        }),
        itemEvent({
          environment: env,
          entityType: 'build_trigger',
          eventType: 'deploy_succeeded',
          entityId: 'bt-1',
          itemTypeId: null,
          itemTypeApiKey: null,
          entity: { type: 'build_trigger', id: 'bt-1' },
        }),
        itemEvent({
          environment: env,
          entityType: 'build_trigger',
          eventType: 'deploy_succeeded',
          entityId: 'bt-2',
          itemTypeId: null,
          itemTypeApiKey: null,
          entity: { type: 'build_trigger', id: 'bt-2' },
        }),
        // Another environment: nothing listens there.
        publish({ environment: randomId('elsewhere') }),
      ];
      await pipeline.emit(events);
      expect(await matchedNames(db, events, names)).toEqual([
        ['all_item_publish', 'by_item', 'by_model_id', 'by_model_key', 'primary_only'],
        ['all_item_publish', 'primary_only'],
        ['all_item_publish', 'by_model_id', 'by_model_key', 'sandbox_only'],
        ['by_item'],
        ['seed_filter_shape'],
        ['model_events'],
        ['build'],
        [],
        [],
      ]);
    });

    it('follows webhook changes announced on pub/sub and creates each call once', async ({
      db,
      pipeline,
      updates,
    }) => {
      const { env, webhook } = updates;
      const event = itemEvent({ environment: env });
      await pipeline.emit([event]);
      const call = await pipeline.waitForCall(event.id, webhook.id, ['success']);
      // The same event enqueued again (a sweeper, a retry) creates no second call and no second send.
      await pipeline.runtime.matchQueue.add(
        'match-event',
        { eventIds: [event.id] },
        { jobId: `again-${event.id}` },
      );
      await pipeline.runtime.sweeper.sweep();
      const { rows } = await db.query('SELECT id FROM webhook_calls WHERE event_id = $1', [
        event.id,
      ]);
      expect(rows).toEqual([{ id: call.id }]);
    });

    it('matches a batch in one job, and still takes a job of one event in the old shape', async ({
      db,
      pipeline,
      updates,
    }) => {
      const { env, webhook } = updates;
      const batch = Array.from({ length: 60 }, () => itemEvent({ environment: env }));
      await pipeline.emit(batch);
      // 60 calls of one event batch, created by one statement and started together.
      for (const event of batch) await pipeline.waitForCall(event.id, webhook.id, ['success']);
      const legacy = itemEvent({ environment: env });
      await insertEvents(db, [legacy]);
      // Typed loosely on purpose: this is the data shape of jobs enqueued by the first release.
      const queue = pipeline.runtime.matchQueue as unknown as Queue<{ eventId: string }>;
      await queue.add('match-event', { eventId: legacy.id }, { jobId: `legacy-${legacy.id}` });
      await pipeline.waitForCall(legacy.id, webhook.id, ['success']);
    });
  });

  describe('SSRF guard (docs/api.md, The webhook resource)', () => {
    it('refuses loopback, literal or resolved, when the allow-list does not hold it, with no retry', async () => {
      const strictDb = await createTestDb();
      const strict = await startPipeline(strictDb.db, { allowCidrs: parseCidrList('') }, { mode });
      const local = await startReceiver();
      try {
        const port = new URL(local.url).port;
        const literal = await addWebhook(
          strictDb.db,
          strict,
          webhookInput(`http://127.0.0.1:${port}/x`),
        );
        const named = await addWebhook(
          strictDb.db,
          strict,
          webhookInput(`http://localhost:${port}/y`),
        );
        const event = itemEvent();
        await emitEvents(strictDb.db, strict, [event]);
        const a = await waitForCall(strictDb.db, event.id, literal.id, ['failed']);
        const b = await waitForCall(strictDb.db, event.id, named.id, ['failed']);
        expect(a.failureReason).toMatch(
          /blocked address range: loopback; add 127.0.0.1\/32 to SSRF_ALLOW_CIDRS/,
        );
        expect(b.failureReason).toMatch(
          /localhost resolves to .*loopback; add .* to SSRF_ALLOW_CIDRS/,
        );
        // A configuration error, not a transient one: failed at once, though auto_retry is on.
        for (const call of [a, b]) {
          expect(call.failureReason).toMatch(/not retried/);
          expect(call.attemptedAutoRetriesCount).toBe(0);
          expect(call.nextRetryAt).toBeNull();
        }
        expect(local.requests).toHaveLength(0);
        expect(a.requestPayload).toContain('"webhook_call_id"');
      } finally {
        await strict.close();
        await local.close();
        await strictDb.cleanup();
      }
    });
  });
});
