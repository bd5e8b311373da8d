import { describe, expect } from 'vitest';
import { waitFor, type Receiver } from '@herald/testkit';
import type { ServerResponse } from 'node:http';
import {
  cancelBulkJob,
  createBulkJob,
  findBulkJob,
  type BulkJobRecord,
  type Db,
} from '@herald/store';
import { itemEvent, itemEventsIn, pipelineTest, webhookInput } from '../../harness.test-support.js';
import type { Pipeline } from '../../harness.test-support.js';

// Bulk jobs end to end (docs/api.md, Bulk jobs): a delivery process takes the job, selects,
// sends at its pace and records each item; a real receiver counts what arrives.
const it = pipelineTest({
  retry: { scheduleMs: [60_000], jitter: 0, retryAfterMaxMs: 0 },
  // Failures here must not open circuits that would hold the jobs back.
  circuit: { failures: 0, cooldownMs: 60_000 },
  // The cancel test holds a request at the receiver until the cancel has answered.
  timeoutMs: 30_000,
});

async function finished(db: Db, id: string): Promise<BulkJobRecord> {
  return waitFor(
    async () => {
      const job = await findBulkJob(db, id);
      expect(job?.state).toBe('completed');
      return job!;
    },
    { timeout: 20_000, interval: 50 },
  );
}

/** A webhook named `name` with `count` item events in `env`, each delivered with success. */
async function delivered(
  { pipeline, receiver }: { pipeline: Pipeline; receiver: Receiver },
  env: string,
  name: string,
  count: number,
) {
  receiver.respond = (_req, res) => res.writeHead(200).end();
  const webhook = await pipeline.addWebhook(
    webhookInput(receiver.url, { name, events: itemEventsIn(env) }),
  );
  const events = Array.from({ length: count }, () => itemEvent({ environment: env }));
  await pipeline.emit(events);
  for (const event of events) await pipeline.waitForCall(event.id, webhook.id, ['success']);
  return webhook;
}

/** How many requests carried each webhook-id (a call id) since `since`. */
function countByCall(requests: { headers: Record<string, unknown>; at: number }[], since = 0) {
  const counts = new Map<string, number>();
  for (const request of requests) {
    if (request.at < since) continue;
    const id = String(request.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

describe('bulk resend', () => {
  it('sends each selected failed call once, skips calls on their way, and counts them', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const env = 'bulk-resend-env';
    let down = true;
    receiver.respond = (_req, res) => res.writeHead(down ? 500 : 200).end();
    // auto_retry off: each call fails at its first attempt.
    const webhook = await pipeline.addWebhook(
      webhookInput(receiver.url, { events: itemEventsIn(env), autoRetry: false }),
    );
    const events = Array.from({ length: 25 }, () => itemEvent({ environment: env }));
    await pipeline.emit(events);
    for (const event of events) await pipeline.waitForCall(event.id, webhook.id, ['failed']);
    // One call still on its way: a retry is planned (another webhook with auto_retry on).
    const retrying = await pipeline.addWebhook(
      webhookInput(receiver.url, { name: 'retrying', events: itemEventsIn(`${env}-r`) }),
    );
    const onItsWay = itemEvent({ environment: `${env}-r` });
    await pipeline.emit([onItsWay]);
    const rescheduled = await pipeline.waitForCall(onItsWay.id, retrying.id, ['rescheduled']);

    down = false;
    const since = Date.now();
    const job = await createBulkJob(db, {
      kind: 'bulk_resend',
      webhookId: null,
      filter: { status: 'failed', entity_type: 'item' },
      ratePerSecond: null,
    });
    const resendAlso = await createBulkJob(db, {
      kind: 'bulk_resend',
      webhookId: retrying.id,
      filter: { webhook_id: retrying.id },
      ratePerSecond: null,
    });
    const done = await finished(db, job.id);
    expect(done).toMatchObject({ matched: 25, succeeded: 25, failed: 0, skipped: 0 });
    const counts = countByCall(receiver.requests, since);
    for (const event of events) {
      const call = await pipeline.callOf(event.id, webhook.id);
      expect(call.status).toBe('success');
      expect(counts.get(call.id)).toBe(1);
    }
    // The rescheduled call was not sent by the job: its retry will send it.
    expect(await finished(db, resendAlso.id)).toMatchObject({ matched: 1, skipped: 1 });
    expect(counts.get(rescheduled.id)).toBeUndefined();
    expect((await pipeline.callOf(onItsWay.id, retrying.id)).status).toBe('rescheduled');
  });

  it('keeps to its pace', async ({ db, pipeline, receiver }) => {
    const env = 'bulk-pace-env';
    const webhook = await delivered({ pipeline, receiver }, env, 'paced', 12);
    const since = Date.now();
    const job = await createBulkJob(db, {
      kind: 'bulk_resend',
      webhookId: webhook.id,
      filter: { webhook_id: webhook.id },
      ratePerSecond: 20,
    });
    await finished(db, job.id);
    const sent = receiver.requests.filter((request) => request.at >= since).map((r) => r.at);
    expect(sent).toHaveLength(12);
    // 12 items at 20/s: at least 11 gaps of 50 ms (a little slack for timer granularity).
    expect(sent.at(-1)! - sent[0]!).toBeGreaterThanOrEqual(11 * 50 - 30);
  });
});

describe('cancel', () => {
  it('sends nothing it had not started once the cancel answered, and counts what was in flight', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const env = 'bulk-cancel-env';
    const webhook = await delivered({ pipeline, receiver }, env, 'cancelled', 4);
    // The job's first request is held at the receiver until the cancel has answered.
    const held: ServerResponse[] = [];
    receiver.respond = (_req, res) => void held.push(res);
    const since = Date.now();
    const bulkSent = () => receiver.requests.filter((request) => request.at >= since);
    const finishedItems = async () =>
      (await pipeline.runtime.metrics.bulkItems.get()).values.reduce((n, v) => n + v.value, 0);
    const itemsBefore = await finishedItems();
    // 2/s: a batch of two items, the second due 500 ms after the first.
    const job = await createBulkJob(db, {
      kind: 'bulk_resend',
      webhookId: webhook.id,
      filter: { webhook_id: webhook.id },
      ratePerSecond: 2,
    });
    await waitFor(() => expect(held).toHaveLength(1), { timeout: 20_000, interval: 10 });
    expect((await cancelBulkJob(db, job.id))?.state).toBe('cancelled');
    for (const res of held) res.writeHead(200).end();
    receiver.respond = (_req, res) => res.writeHead(200).end();
    // The batch ends (its one item sent is counted in the metric) once its second item's turn
    // has come: by then that item went, or saw the cancel and did not.
    await waitFor(async () => expect(await finishedItems()).toBe(itemsBefore + 1), {
      timeout: 20_000,
      interval: 50,
    });
    expect(bulkSent()).toHaveLength(1);
    expect(await findBulkJob(db, job.id)).toMatchObject({
      state: 'cancelled',
      succeeded: 1,
      failed: 0,
    });
  });
});

describe('replay', () => {
  it("sends a new webhook exactly the range's matching events, in the order they occurred", async ({
    db,
    pipeline,
    receiver,
  }) => {
    const env = 'replay-env';
    receiver.respond = (_req, res) => res.writeHead(200).end();
    // Events stored before the webhook exists, accepted in an order other than their occurrence.
    const base = Date.parse('2026-10-01T00:00:00Z');
    const events = Array.from({ length: 40 }, (_, i) =>
      itemEvent({
        environment: env,
        eventType: i % 4 === 3 ? 'delete' : 'publish',
        occurredAt: new Date(base + i * 60_000),
      }),
    );
    const shuffled = [...events].sort(() => Math.random() - 0.5);
    for (let i = 0; i < shuffled.length; i += 10) {
      await pipeline.emit(shuffled.slice(i, i + 10));
    }
    // Matched (no webhook yet): no call exists.
    await waitFor(async () => {
      const { rows } = await db.query<{ n: string }>(
        'SELECT count(*) AS n FROM events WHERE environment = $1 AND matched_at IS NULL',
        [env],
      );
      expect(Number(rows[0]!.n)).toBe(0);
    });
    const webhook = await pipeline.addWebhook(
      webhookInput(receiver.url, { name: 'replayed', events: itemEventsIn(env, ['publish']) }),
    );
    const since = Date.now();
    // Minutes 5 to 30, exclusive: events 6..29, of which the publishes.
    const range = {
      gt: new Date(base + 5 * 60_000).toISOString(),
      lt: new Date(base + 30 * 60_000).toISOString(),
    };
    const job = await createBulkJob(db, {
      kind: 'replay',
      webhookId: webhook.id,
      filter: { occurred_at: range },
      ratePerSecond: null,
    });
    const expected = events.filter((e, i) => i > 5 && i < 30 && e.eventType === 'publish');
    const done = await finished(db, job.id);
    expect(done).toMatchObject({ matched: expected.length, succeeded: expected.length });
    const received = receiver.requests
      .filter((request) => request.at >= since)
      .map((request) => (JSON.parse(request.body) as { entity: { id: string } }).entity.id);
    expect(received).toEqual(expected.map((event) => event.entityId));
    // Each as a call of the webhook, its attempt triggered by the replay.
    const call = await pipeline.callOf(expected[0]!.id, webhook.id);
    const { rows } = await db.query<{ trigger: string }>(
      'SELECT trigger FROM webhook_call_attempts WHERE call_id = $1',
      [call.id],
    );
    expect(rows).toEqual([{ trigger: 'replay' }]);
  });
});
