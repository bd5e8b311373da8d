import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, onTestFinished } from 'vitest';
import type { BrokerDestination } from '@herald/contract';
import {
  createBulkJob,
  createTestWebhookCall,
  findBulkJob,
  findEvent,
  insertEvents,
  listWebhookCallAttempts,
  type Db,
  type WebhookInput,
  type WebhookRecord,
} from '@herald/store';
import { enqueueDeliveries } from '@herald/runtime';
import { startTcpProxy, waitFor } from '@herald/testkit';
import {
  addWebhook,
  brokerWebhook,
  callOf,
  emitEvents,
  itemEvent,
  itemEventsIn,
  itemVersion,
  pipelineTest,
  sendToDestination,
  waitForCall,
  webhookInput,
  type Pipeline,
} from '../../../harness.test-support.js';
import {
  BROKER_KINDS,
  startConsumer,
  type BrokerConsumer,
  type ConsumedMessage,
} from './consumers.test-support.js';

// The same guarantees on every broker destination as on HTTP (issue #33 item 2): test sends,
// bulk resend, replay, per-entity order, coalescing and batching, checked at a consumer of the real broker;
// and the call log says what was published where, the broker's answer, credentials hidden.

const it = pipelineTest({
  retry: { scheduleMs: [200, 200, 200, 200, 200], jitter: 0, retryAfterMaxMs: 1000 },
  circuit: { failures: 0, cooldownMs: 60_000 },
});
const unique = (prefix: string) => `${prefix}-${randomBytes(5).toString('hex')}`;

/** A consumer of `kind`, stopped and its broker objects removed after the test. */
async function consumerOf(kind: BrokerDestination['kind']): Promise<BrokerConsumer> {
  const consumer = await startConsumer(kind);
  onTestFinished(() => consumer.close());
  return consumer;
}

/**
 * A consumer of `kind` and a webhook publishing to its broker through a proxy (which the test
 * cuts and restores), all closed after the test.
 */
async function behindProxy(
  db: Db,
  pipeline: Pipeline,
  kind: BrokerDestination['kind'],
  overrides: Partial<WebhookInput>,
) {
  const consumer = await consumerOf(kind);
  const proxy = await startTcpProxy(consumer.upstream);
  onTestFinished(() => proxy.close());
  const destination = consumer.destination(proxy.url(consumer.destination().url));
  return { consumer, proxy, ...(await brokerWebhook(db, pipeline, destination, overrides)) };
}

interface Entry {
  entity: string;
  version: number;
}

/** What a message carries (one entry, or a batch's), verified with the webhook's secret. */
function entriesOf(webhook: WebhookRecord, message: ConsumedMessage): Entry[] {
  type Payload = { entity: { id: string; attributes: { title: string } } };
  const payload = new Webhook(webhook.signingSecret).verify(message.body, message.headers) as
    Payload | { events: Payload[] };
  return ('events' in payload ? payload.events : [payload]).map((entry) => ({
    entity: entry.entity.id,
    version: Number(entry.entity.attributes.title.slice(1)),
  }));
}

/** The consumer's messages of `webhook` once there are `count` distinct ones. */
async function consumed(
  consumer: BrokerConsumer,
  calls: () => Promise<Set<string>>,
  count: number,
): Promise<ConsumedMessage[]> {
  return waitFor(async () => {
    const ids = await calls();
    const got = consumer.received.filter((message) => ids.has(message.id));
    expect(new Set(got.map((message) => message.id)).size).toBe(count);
    return got;
  });
}

async function callIds(db: Db, webhookId: string): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM webhook_calls WHERE webhook_id = $1',
    [webhookId],
  );
  return new Set(rows.map((row) => row.id));
}

async function finishedJob(db: Db, id: string) {
  return waitFor(async () => {
    const job = await findBulkJob(db, id);
    expect(job?.state).toBe('completed');
    return job!;
  });
}

describe.each(BROKER_KINDS)('%s', (kind) => {
  it('the call log says what was published where and what the broker answered, credentials hidden', async ({
    db,
    pipeline,
  }) => {
    const consumer = await consumerOf(kind);
    const secret = unique('s3cret');
    const destination = withCredentials(consumer.destination(), secret);
    const { webhook, event, call } = await sendToDestination(db, pipeline, destination, [
      'success',
    ]);
    const [message] = await consumed(consumer, () => callIds(db, webhook.id), 1);
    expect(message!.id).toBe(call.id);

    const logged = await listWebhookCallAttempts(db, call.id, { offset: 0, limit: 10 });
    const attempt = logged!.attempts[0]!;
    const where = {
      rabbitmq: `exchange=${'exchange' in destination ? destination.exchange : ''} routing_key=changes`,
      nats: `subject=${'subject' in destination ? destination.subject : ''} (JetStream)`,
      mqtt: `topic=${'topic' in destination ? destination.topic : ''} (QoS 1)`,
      redis_stream: `stream=${'stream' in destination ? destination.stream : ''} (MAXLEN ~ 100000)`,
    }[kind];
    expect(attempt.requestUrl).toMatch(
      new RegExp(`^${kind}: [a-z]+://[^ ]*:\\*\\*\\*@127\\.0\\.0\\.1:\\d+ `),
    );
    expect(attempt.requestUrl).toContain(where);
    expect(attempt.responseStatus).toBe(200);
    expect(attempt.responseHeaders).toMatchObject({ 'message-id': call.id });
    expect(attempt.responsePayload).toMatch(
      {
        rabbitmq: /^confirmed by RabbitMQ at 127\.0\.0\.1:\d+: published to exchange "/,
        nats: /^stored by NATS at 127\.0\.0\.1:\d+: stream "[^"]+" sequence \d+ on subject "/,
        mqtt: /^acknowledged \(PUBACK\) by MQTT broker at 127\.0\.0\.1:\d+ on topic "/,
        redis_stream: /^added by Redis at 127\.0\.0\.1:\d+ to stream "[^"]+" as entry \d+-\d+$/,
      }[kind],
    );
    expect(attempt.requestHeaders['webhook-signature']).toBeDefined();
    expect(JSON.stringify(logged)).not.toContain(secret);
    expect(JSON.stringify(logged)).not.toContain(':guest@');
    expect(JSON.stringify(await callOf(db, event.id, webhook.id))).not.toContain(secret);
  });

  it('per-entity order: each entity’s versions reach the consumer in order, once a failure held them', async ({
    db,
    pipeline,
  }) => {
    const { consumer, proxy, webhook, environment } = await behindProxy(db, pipeline, kind, {
      deliveryOrder: 'per_entity',
    });
    // The broker is away for the first versions: they wait in their lanes, retried.
    await proxy.cut();
    const entities = [unique('a'), unique('b')];
    const events = [1, 2, 3, 4].flatMap((v) => entities.map((e) => itemVersion(environment, e, v)));
    await emitEvents(db, pipeline, events.slice(0, 4));
    await waitForCall(db, events[0]!.id, webhook.id, ['rescheduled']);
    await emitEvents(db, pipeline, events.slice(4));
    await proxy.restore();
    const messages = await consumed(consumer, () => callIds(db, webhook.id), events.length);
    for (const entity of entities) {
      const versions = messages
        .flatMap((message) => entriesOf(webhook, message))
        .filter((entry) => entry.entity === entity)
        .map((entry) => entry.version);
      expect(versions.filter((v, i) => versions.indexOf(v) === i)).toEqual([1, 2, 3, 4]);
    }
  });

  it('coalescing: events that waited behind a failure go as one message of the latest state', async ({
    db,
    pipeline,
  }) => {
    const { consumer, proxy, webhook, environment } = await behindProxy(db, pipeline, kind, {
      deliveryOrder: 'per_entity',
      coalesceEvents: true,
    });
    await proxy.cut();
    const entity = unique('c');
    const [first, ...later] = [1, 2, 3].map((v) => itemVersion(environment, entity, v));
    await emitEvents(db, pipeline, [first!]);
    await waitForCall(db, first!.id, webhook.id, ['rescheduled']);
    await emitEvents(db, pipeline, later);
    await waitFor(async () => expect((await callIds(db, webhook.id)).size).toBe(1));
    await proxy.restore();
    const call = await waitForCall(db, first!.id, webhook.id, ['success']);
    const messages = await consumed(consumer, () => callIds(db, webhook.id), 1);
    expect(messages.map((message) => message.id)).toContain(call.id);
    const last = messages.filter((message) => message.id === call.id).at(-1)!;
    expect(entriesOf(webhook, last)).toEqual([{ entity, version: 3 }]);
  });

  it('batching: events within the window go as one message listing them', async ({
    db,
    pipeline,
  }) => {
    const consumer = await consumerOf(kind);
    const { webhook, environment } = await brokerWebhook(db, pipeline, consumer.destination(), {
      batch: { window_ms: 500, max_events: 10 },
    });
    const events = [unique('d'), unique('e'), unique('f')].map((e) =>
      itemVersion(environment, e, 1),
    );
    await emitEvents(db, pipeline, events);
    const [message] = await consumed(consumer, () => callIds(db, webhook.id), 1);
    expect(
      entriesOf(webhook, message!)
        .map((entry) => entry.entity)
        .sort(),
    ).toEqual(events.map((event) => event.entityId).sort());
  });

  it('a test send publishes the event it names at once; with the broker away it fails once, never retried', async ({
    db,
    pipeline,
  }) => {
    const { consumer, proxy, webhook, environment } = await behindProxy(db, pipeline, kind, {});
    const event = itemVersion(environment, unique('record'), 1);
    await insertEvents(db, [event]);
    const stored = (await findEvent(db, event.id))!;
    // As POST /webhooks/:id/test does (services/ingest's webhooks.send-test.ts).
    const sendTest = async () => {
      const call = await createTestWebhookCall(db, webhook.id, stored);
      await enqueueDeliveries(pipeline.runtime.deliverQueue, [
        { id: call.id, webhookId: webhook.id },
      ]);
      return call.id;
    };
    const sent = await sendTest();
    const [message] = await consumed(consumer, () => Promise.resolve(new Set([sent])), 1);
    expect(entriesOf(webhook, message!)).toEqual([{ entity: event.entityId, version: 1 }]);
    // The broker has the message before the outcome is written.
    await waitFor(async () => {
      const first = await listWebhookCallAttempts(db, sent, { offset: 0, limit: 10 });
      expect(first!.attempts.map((a) => [a.trigger, a.outcome])).toEqual([['test', 'success']]);
    });

    await proxy.cut();
    const failed = await sendTest();
    await waitFor(async () => {
      const { rows } = await db.query<{ status: string }>(
        'SELECT status FROM webhook_calls WHERE id = $1',
        [failed],
      );
      expect(rows[0]!.status).toBe('failed');
    });
    const attempts = await listWebhookCallAttempts(db, failed, { offset: 0, limit: 10 });
    expect(attempts!.attempts.map((a) => a.trigger)).toEqual(['test']);
    expect(attempts!.attempts[0]!.outcome).not.toBe('success');
  });

  it('bulk resend sends the failed calls again; replay sends past events to a new webhook', async ({
    db,
    pipeline,
  }) => {
    // auto_retry off: each call fails for good at its first attempt while the broker is away.
    const { consumer, proxy, webhook, environment } = await behindProxy(db, pipeline, kind, {
      autoRetry: false,
    });
    await proxy.cut();
    // At a moment of their own, for the replay to select them alone.
    const at = new Date(Date.UTC(2031, 0, 1 + BROKER_KINDS.indexOf(kind)));
    const events = [1, 2, 3].map(() => itemEvent({ environment, occurredAt: at }));
    await emitEvents(db, pipeline, events);
    for (const event of events) await waitForCall(db, event.id, webhook.id, ['failed']);
    await proxy.restore();
    const resend = await createBulkJob(db, {
      kind: 'bulk_resend',
      webhookId: webhook.id,
      filter: { webhook_id: webhook.id, status: 'failed' },
      ratePerSecond: null,
    });
    expect(await finishedJob(db, resend.id)).toMatchObject({ matched: 3, succeeded: 3 });
    await consumed(consumer, () => callIds(db, webhook.id), 3);

    // A webhook made after the events, to the same broker: a replay sends them to it.
    const replayed = await addWebhook(
      db,
      pipeline,
      webhookInput('https://unused.example/hook', {
        events: itemEventsIn(environment),
        destination: consumer.destination(),
      }),
    );
    const replay = await createBulkJob(db, {
      kind: 'replay',
      webhookId: replayed.id,
      filter: {
        occurred_at: {
          gt: new Date(at.getTime() - 1).toISOString(),
          lt: new Date(at.getTime() + 1).toISOString(),
        },
      },
      ratePerSecond: null,
    });
    expect(await finishedJob(db, replay.id)).toMatchObject({ matched: 3, succeeded: 3 });
    const messages = await consumed(consumer, () => callIds(db, replayed.id), 3);
    for (const message of messages) expect(entriesOf(replayed, message)).toHaveLength(1);
  });
});

/** The destination with a user and `password` in its URL (the shared brokers ask for none). */
function withCredentials(destination: BrokerDestination, password: string): BrokerDestination {
  const url = new URL(destination.url);
  // RabbitMQ's guest has its own password: the URL keeps it, the call log must hide it.
  if (destination.kind === 'rabbitmq') return destination;
  // Redis's default user without a password takes any; NATS and Mosquitto, without
  // authorization, ignore what a client sends.
  url.username = destination.kind === 'redis_stream' ? 'default' : 'herald';
  url.password = password;
  return { ...destination, url: url.toString() };
}
