import type { ServerResponse } from 'node:http';
import { describe, expect } from 'vitest';
import {
  findWebhookCall,
  insertEvents,
  insertWebhook,
  listEventCalls,
  type Db,
  type WebhookCallRecord,
  type WebhookInput,
  type WebhookRecord,
} from '@herald/store';
import { randomId, type Received, waitFor } from '@herald/testkit';
import {
  itemEventsIn,
  itemVersion,
  pipelineTest,
  startPipeline,
  webhookInput,
  type Pipeline,
  type Receiver,
} from '../../harness.test-support.js';

/** The batch test's window: long enough for three POSTs on a loaded machine. */
const BATCH_WINDOW_MS = 2000;

/** Flow control (issue #15 items 1–3): ordered, coalesced and batched calls, end to end. */

const SETTINGS = {
  retry: { scheduleMs: [200, 200, 200], jitter: 0, retryAfterMaxMs: 1000 },
  // The tests hold answers at the receiver while events arrive (holdAnswers): on a busy machine
  // that takes seconds, and a request held past the timeout would be sent again.
  timeoutMs: 30_000,
  // A webhook's test is sure the index has not read it again unless it was announced.
  indexReloadMs: 3_600_000,
};
const it = pipelineTest(SETTINGS);

/** Versions of one record: update events of `record`, version n at minute n. */
const versionOf = (environment: string, record: string, n: number, eventType = 'update') =>
  itemVersion(environment, record, n, {
    eventType,
    occurredAt: new Date(Date.UTC(2026, 10, 24, 10, n)),
  });

interface Sent {
  path: string;
  body: {
    event_type: string;
    entity: { id: string; attributes: { title: string } };
    events?: { event_type: string; entity: { id: string; attributes: { title: string } } }[];
  };
}

const sentTo = (requests: Received[], path: string): Sent[] =>
  requests
    .filter((request) => request.url === path)
    .map((request) => ({ path, body: JSON.parse(request.body) as Sent['body'] }));

const titles = (sent: Sent[]): string[] => sent.map((s) => s.body.entity.attributes.title);

/** What went for one entity. */
const sentFor = (sent: Sent[], entityId: string): Sent[] =>
  sent.filter((s) => s.body.entity.id === entityId);

async function callsOf(db: Db, webhook: WebhookRecord) {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM webhook_calls WHERE webhook_id = $1 ORDER BY id',
    [webhook.id],
  );
  return Promise.all(rows.map(async (row) => (await findWebhookCall(db, row.id))!));
}

/** Waits until the calls have these statuses, in any order. */
async function waitForStatuses(
  calls: () => Promise<WebhookCallRecord[]>,
  statuses: string[],
): Promise<void> {
  await waitFor(async () =>
    expect((await calls()).map((call) => call.status).sort()).toEqual([...statuses].sort()),
  );
}

/** Holds the answers to requests on `path` until `release` (others get 200 at once). */
function holdAnswers(
  receiver: { respond: (req: Received, res: ServerResponse) => void },
  path: string,
) {
  const held: ServerResponse[] = [];
  let holding = true;
  receiver.respond = (req, res) => {
    if (req.url === path && holding) held.push(res);
    else res.end('ok');
  };
  return {
    held,
    release() {
      holding = false;
      for (const res of held.splice(0)) res.end('ok');
    },
  };
}

/** What a flow test gets: the fixtures, and a webhook of its own environment and receiver path. */
interface Flow {
  db: Db;
  pipeline: Pipeline;
  receiver: Receiver;
  environment: string;
  path: string;
  /** The webhook's calls, oldest first. */
  calls: () => Promise<WebhookCallRecord[]>;
  /** What the receiver got on the webhook's path, in the order it came. */
  sent: () => Sent[];
}

/** A test of a webhook with these flow control settings (Flow). */
function flowTest(
  title: string,
  settings: Partial<WebhookInput>,
  body: (flow: Flow) => Promise<void>,
) {
  it(title, async ({ db, pipeline, receiver }) => {
    const environment = randomId('env');
    const path = `/${randomId('flow')}`;
    const input = webhookInput(receiver.url + path, {
      events: itemEventsIn(environment),
      ...settings,
    });
    const webhook = await pipeline.addWebhook(input);
    await body({
      db,
      pipeline,
      receiver,
      environment,
      path,
      calls: () => callsOf(db, webhook),
      sent: () => sentTo(receiver.requests, path),
    });
  });
}

describe('flow control', () => {
  flowTest(
    'per_entity: one entity in event order, one at a time, through retries; others flow past',
    { deliveryOrder: 'per_entity' },
    async ({ pipeline, receiver, environment, path, calls, sent }) => {
      // The first request for record a fails: what comes after it waits for its retry.
      let failedOnce = false;
      receiver.respond = (req, res) => {
        const body = JSON.parse(req.body || '{}') as Sent['body'];
        if (req.url === path && body.entity?.id === 'a' && !failedOnce) {
          failedOnce = true;
          res.statusCode = 500;
        }
        res.end('ok');
      };
      // Arrival order is not event order: v3 first, then v1 and v2 in one request, then b's.
      await pipeline.emit([versionOf(environment, 'a', 3)]);
      await pipeline.emit([versionOf(environment, 'a', 2), versionOf(environment, 'a', 1)]);
      await pipeline.emit([versionOf(environment, 'b', 1)]);
      await waitFor(
        async () => {
          const all = await calls();
          expect(all).toHaveLength(4);
          // Sent, or superseded (never sent).
          for (const call of all) expect(['success', 'failed']).toContain(call.status);
        },
        { timeout: 15_000, interval: 50 },
      );
      expect(failedOnce).toBe(true);
      // v3 may have gone before v1 and v2 arrived: then they are superseded, never sent after it.
      const order = titles(sentFor(sent(), 'a'));
      expect(order).toEqual([...order].sort());
      expect(order.at(-1)).toBe('v3');
      expect(titles(sentFor(sent(), 'b'))).toEqual(['v1']);
    },
  );

  flowTest(
    'per_entity: a later event waits for a failing predecessor, and an older one is superseded',
    { deliveryOrder: 'per_entity' },
    async ({ pipeline, receiver, environment, path, calls, sent }) => {
      const gate = holdAnswers(receiver, path);
      const v2 = versionOf(environment, 'a', 2);
      const v3 = versionOf(environment, 'a', 3);
      const v1 = versionOf(environment, 'a', 1);
      const other = versionOf(environment, 'c', 1);
      await pipeline.emit([v2]);
      await waitFor(() => expect(gate.held).toHaveLength(1));
      // v2 is in flight: v3 waits behind it; v1 is older than what is being sent.
      await pipeline.emit([v3]);
      await pipeline.emit([v1]);
      await pipeline.emit([other]);
      await waitFor(async () => {
        const all = await calls();
        expect(all).toHaveLength(4);
        const superseded = all.find((call) => call.eventId === v1.id)!;
        expect(superseded.status).toBe('failed');
        expect(superseded.failureReason).toMatch(/^superseded/);
        expect(superseded.lastSentAt).toBeNull();
      });
      // c is another entity: it went while a's v2 was still in flight (held).
      await waitFor(() => expect(gate.held).toHaveLength(2));
      const waiting = (await calls()).find((call) => call.eventId === v3.id)!;
      expect(waiting.status).toBe('pending');
      expect(waiting.lastSentAt).toBeNull();
      gate.release();
      await waitForStatuses(calls, ['failed', 'success', 'success', 'success']);
      expect(titles(sentFor(sent(), 'a'))).toEqual(['v2', 'v3']);
    },
  );

  flowTest(
    'coalesce: events that come while a call waits join it; the receiver gets the latest state once',
    { deliveryOrder: 'per_entity', coalesceEvents: true },
    async ({ db, pipeline, receiver, environment, path, calls, sent }) => {
      const gate = holdAnswers(receiver, path);
      const create = versionOf(environment, 'a', 1, 'create');
      await pipeline.emit([create]);
      await waitFor(() => expect(gate.held).toHaveLength(1));
      // While v1 is in flight, v2…v6 come one request at a time: they all join one waiting call.
      const updates = [2, 3, 4, 5, 6].map((n) => versionOf(environment, 'a', n));
      for (const update of updates) await pipeline.emit([update]);
      await waitFor(async () => {
        const all = await calls();
        expect(all).toHaveLength(2);
        // In the order they reached the call (match jobs run side by side).
        expect([...all[1]!.eventIds].sort()).toEqual(updates.map((event) => event.id).sort());
      });
      // An event that joined another's call finds it (GET /events/:id).
      const joined = await calls();
      expect((await listEventCalls(db, updates[2]!.id)).map((call) => call.id)).toEqual([
        joined[1]!.id,
      ]);
      gate.release();
      await waitForStatuses(calls, ['success', 'success']);
      const first = sent();
      expect(titles(first)).toEqual(['v1', 'v6']);
      expect(first.map((s) => s.body.event_type)).toEqual(['create', 'update']);

      // A create followed by updates arrives as a create; a delete supersedes the updates before.
      const gate2 = holdAnswers(receiver, path);
      const b = [
        versionOf(environment, 'b', 1, 'update'),
        versionOf(environment, 'b', 2, 'create'),
        versionOf(environment, 'b', 3, 'update'),
      ];
      await pipeline.emit([b[0]!]);
      await waitFor(() => expect(gate2.held).toHaveLength(1));
      await pipeline.emit([b[1]!, b[2]!]);
      const d = [
        versionOf(environment, 'd', 1, 'create'),
        versionOf(environment, 'd', 2, 'update'),
      ];
      await pipeline.emit([d[0]!]);
      await waitFor(() => expect(gate2.held).toHaveLength(2));
      await pipeline.emit([d[1]!, versionOf(environment, 'd', 3, 'delete')]);
      await waitFor(async () => {
        expect((await calls()).filter((call) => call.eventIds.length === 2)).toHaveLength(2);
      });
      gate2.release();
      await waitFor(() => expect(sent()).toHaveLength(6));
      const last = sent().slice(2);
      const typesAndTitles = (id: string) =>
        sentFor(last, id).map((s) => [s.body.event_type, s.body.entity.attributes.title]);
      expect(typesAndTitles('b')).toEqual([
        ['update', 'v1'],
        ['create', 'v3'],
      ]);
      expect(typesAndTitles('d')).toEqual([
        ['create', 'v1'],
        ['delete', 'v3'],
      ]);
    },
  );

  flowTest(
    'batch: the events of a window go as one call listing them; with coalesce, each entity once',
    // A window that holds three requests on a busy machine too (400 ms did not, at load 20).
    { coalesceEvents: true, batch: { window_ms: BATCH_WINDOW_MS, max_events: 100 } },
    async ({ pipeline, environment, calls, sent }) => {
      const started = Date.now();
      // Three requests inside the window: 30 records, each updated twice.
      const records = Array.from({ length: 30 }, (_, i) => `r${i}`);
      await pipeline.emit(records.map((r) => versionOf(environment, r, 1)));
      await pipeline.emit(records.slice(0, 15).map((r) => versionOf(environment, r, 2)));
      await pipeline.emit(records.slice(15).map((r) => versionOf(environment, r, 2)));
      await waitFor(() => expect(sent()).toHaveLength(1), { timeout: BATCH_WINDOW_MS + 5000 });
      const [batch] = sent();
      expect(Date.now() - started).toBeGreaterThanOrEqual(BATCH_WINDOW_MS);
      expect(batch!.body.events).toHaveLength(30);
      expect(new Set(batch!.body.events!.map((e) => e.entity.id)).size).toBe(30);
      expect(batch!.body.events!.every((e) => e.entity.attributes.title === 'v2')).toBe(true);
      await waitFor(async () => {
        expect((await calls()).map((call) => [call.status, call.eventIds.length])).toEqual([
          ['success', 60],
        ]);
      });
    },
  );

  flowTest(
    'batch: max_events closes a batch; batches go one at a time, in the order they opened',
    { batch: { window_ms: 1500, max_events: 10 } },
    async ({ pipeline, environment, calls, sent }) => {
      const events = Array.from({ length: 25 }, (_, i) => ({
        ...versionOf(environment, `s${i}`, 1),
        occurredAt: new Date(Date.UTC(2026, 10, 24, 11, 0, i)),
      }));
      // The second request fills the batch the first opened, then opens two more; its events
      // arrive in the reverse of their order. Its match job starts once the first one's has placed
      // its events: two jobs in the pool at once may commit in either order, and the batch opened
      // first is the one whose placement committed first.
      await pipeline.emit(events.slice(0, 5));
      await waitFor(
        async () => expect((await calls()).map((call) => call.eventIds.length)).toEqual([5]),
        { timeout: 5000 },
      );
      await pipeline.emit(events.slice(5).reverse());
      await waitFor(() => expect(sent()).toHaveLength(3), { timeout: 5000 });
      const batches = sent().map((s) => s.body.events!.map((e) => e.entity.id));
      expect(batches.map((b) => b.length)).toEqual([10, 10, 5]);
      expect(batches.flat()).toEqual(events.map((event) => event.entityId));
      await waitForStatuses(calls, ['success', 'success', 'success']);
    },
  );

  // The process that makes a retry need not be the one that matched the call: its index may not
  // have the webhook yet (created since its last read, the announcement not come, nothing matched
  // here). The lane call the outcome releases still goes: the index is not the word on a webhook.
  it('per_entity: a call released in a process whose index never had its webhook still goes', async ({
    db,
    pipeline,
    receiver,
  }) => {
    // The matching process, a second one of the deployment; its retry comes late enough for it
    // to have closed, so that the file's pipeline takes it.
    const matcher = await startPipeline(
      db,
      { ...SETTINGS, retry: { ...SETTINGS.retry, scheduleMs: [1500] } },
      { prefix: pipeline.coordination.prefix },
    );
    let closed = false;
    try {
      const environment = randomId('env');
      const path = `/${randomId('flow')}`;
      // Written straight to Postgres: no announcement.
      const webhook = await insertWebhook(
        db,
        webhookInput(receiver.url + path, {
          events: itemEventsIn(environment),
          deliveryOrder: 'per_entity',
        }),
      );
      let failedOnce = false;
      receiver.respond = (req, res) => {
        if (req.url === path && !failedOnce) {
          failedOnce = true;
          res.statusCode = 500;
        }
        res.end('ok');
      };
      const v1 = versionOf(environment, 'a', 1, 'create');
      const v2 = versionOf(environment, 'a', 2);
      await insertEvents(db, [v1, v2]);
      expect(matcher.localMatch.offer([v1.id, v2.id])).toBe(true);
      const calls = () => callsOf(db, webhook);
      // v1 failed once and waits for its retry; v2 waits behind it in its lane.
      await waitForStatuses(calls, ['rescheduled', 'pending']);
      await matcher.close();
      closed = true;
      await waitFor(async () => {
        const ended = (await calls()).map((c) => `${c.status} ${c.failureReason ?? ''}`.trim());
        expect(ended).toEqual(['success', 'success']);
      });
      expect(titles(sentTo(receiver.requests, path))).toEqual(['v1', 'v1', 'v2']);
      // The scenario held: the process that made the retry and released v2 never had the webhook.
      expect(pipeline.runtime.index.has(webhook.id)).toBe(false);
    } finally {
      if (!closed) await matcher.close();
    }
  });
});
