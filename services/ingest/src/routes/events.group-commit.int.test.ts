import { describe, expect } from 'vitest';
import { decodeReadAfter } from '@herald/contract';
import { findRecord, readCommitPosition, type Db } from '@herald/store';
import {
  itemEvent,
  modelWithRecordEvents,
  randomId,
  type TestAnswer,
  type TestApi,
  type TestDb,
} from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// Group commit (events/group-commit.ts): concurrent one-event requests share one statement and
// one commit. Each test holds the events table while its requests arrive, so that the first
// request's statement waits and the others gather behind it; then lets it go.

const it = appTest(createApp, { role: 'producer' });

let t: TestDb;
let api: TestApi;
let model: string;
let requests: () => Promise<number>;

it.beforeAll(async ({ testDb, api: client, deps }) => {
  [t, api] = [testDb, client];
  // A model, then one item event on the full path: the route's context cache then knows the
  // model, and the requests below take the one-statement path that group commit combines.
  const seeded = modelWithRecordEvents([randomId('seed')]);
  model = seeded.model.id;
  expect((await api.call('POST', '/events', { data: seeded.events })).status).toBe(202);
  expect(
    (await api.call('POST', '/events', { data: itemEvent('create', randomId('r'), {}, { model }) }))
      .status,
  ).toBe(202);
  // Requests that have reached their write (each observes its batch size just before it).
  requests = async () => {
    const metric = deps.metrics.registry.getSingleMetric('herald_ingest_batch_size_events');
    const values = (await metric!.get()).values;
    const count = values.find(
      (v) => (v as { metricName?: string }).metricName === 'herald_ingest_batch_size_events_count',
    );
    return count!.value;
  };
});

/** A 202's body. */
interface Accepted {
  data: { type: string; id: string; attributes: { status: string } }[];
  meta: { read_after: string };
}

const event = (recordId: string, options: { eventId?: string; title?: string } = {}) =>
  itemEvent('create', recordId, { title: options.title ?? recordId }, { model, ...options });

/**
 * Posts each body as its own request while another connection holds the events table; lets go
 * once every request has reached its write. Resolves with the answers, in the bodies' order.
 */
async function postHeld(bodies: readonly unknown[]) {
  const other = t.connect();
  try {
    const before = await requests();
    const answers: Promise<TestAnswer<Accepted>>[] = [];
    await other.transaction(async (tx) => {
      await tx.query('LOCK TABLE events IN SHARE MODE');
      // One at a time, each at its write before the next is sent: they queue in this order.
      for (const data of bodies) {
        answers.push(api.call<Accepted>('POST', '/events', { data }));
        await expect.poll(requests).toBe(before + answers.length);
      }
    });
    return await Promise.all(answers);
  } finally {
    await other.close();
  }
}

/** How many transactions stored these events. */
async function commits(db: Db, eventIds: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    'SELECT count(DISTINCT xmin::text) AS n FROM events WHERE id = ANY($1)',
    [eventIds],
  );
  return Number(rows[0]!.n);
}

describe('POST /events group commit', () => {
  it('stores concurrent requests in one commit, each answered with its own events and a token past it', async () => {
    const events = Array.from({ length: 12 }, () => event(randomId('g')));
    const before = await readCommitPosition(t.db);
    const answers = await postHeld(events);
    const after = await readCommitPosition(t.db);
    answers.forEach((answer, i) => {
      expect(answer.status).toBe(202);
      expect(answer.body.data).toEqual([
        { type: 'event', id: events[i]!.id, attributes: { status: 'accepted' } },
      ]);
      const position = decodeReadAfter(answer.body.meta.read_after)!;
      expect(position).toBeGreaterThan(before);
      expect(position).toBeLessThanOrEqual(after);
    });
    // The first went alone (its statement waited for the lock), the others together after it.
    expect(
      await commits(
        t.db,
        events.map((e) => e.id),
      ),
    ).toBe(2);
    for (const e of events) {
      expect((await findRecord(t.db, 'main', e.attributes.entity.id))?.currentAttributes).toEqual({
        title: e.attributes.entity.id,
      });
    }
  });

  it('never puts one event id or one record twice in a group: the later request comes after', async () => {
    const [first, again] = [randomId('dup'), randomId('dup')];
    const eventId = randomId('evt');
    const record = randomId('same');
    const bodies = [
      event(randomId('g')),
      event(first, { eventId }),
      event(again, { eventId }),
      event(record, { title: 'older' }),
      event(record, { title: 'newer' }),
    ];
    const answers = await postHeld(bodies);
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202, 202]);
    expect(answers.map((a) => a.body.data[0]!.attributes.status)).toEqual([
      'accepted',
      'accepted',
      'duplicate',
      'accepted',
      'accepted',
    ]);
    // The duplicate stored nothing; the record took both of its events, in order.
    expect(await findRecord(t.db, 'main', again)).toBeNull();
    expect((await findRecord(t.db, 'main', first))?.currentAttributes).toEqual({ title: first });
    expect((await findRecord(t.db, 'main', record))?.currentAttributes).toEqual({
      title: 'newer',
    });
    // Alone, the group after it, and the group after that one with the repeats.
    expect(
      await commits(
        t.db,
        bodies.map((b) => b.id),
      ),
    ).toBe(3);
  });

  it('fails only the request whose write Postgres refuses', async () => {
    const poisoned = randomId('poison');
    const bodies = [
      event(randomId('g')),
      event(randomId('g')),
      event(poisoned),
      event(randomId('g')),
    ];
    // A trigger of this test refuses the one record, as a constraint would.
    await t.db.exec(`
      CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id = '${poisoned}' THEN RAISE EXCEPTION 'refused'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_poison BEFORE INSERT ON records
        FOR EACH ROW EXECUTE FUNCTION refuse_poison();`);
    try {
      const answers = await postHeld(bodies);
      expect(answers.map((a) => a.status)).toEqual([202, 202, 500, 202]);
      const stored = await t.db.query<{ id: string }>('SELECT id FROM events WHERE id = ANY($1)', [
        bodies.map((b) => b.id),
      ]);
      expect(stored.rows.map((r) => r.id).sort()).toEqual(
        [bodies[0]!.id, bodies[1]!.id, bodies[3]!.id].sort(),
      );
    } finally {
      await t.db.exec('DROP TRIGGER refuse_poison ON records; DROP FUNCTION refuse_poison()');
    }
  });
});
