import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { insertEvents } from '@herald/store';
import { createTestDb, silentLogger, testItemEvent, type TestDb, waitFor } from '@herald/testkit';
import { Lease } from './lease.js';

// A heartbeat every 100 ms.
const LEASE_MS = 300;

let t: TestDb;
let event = 0;
const leases: Lease[] = [];

beforeAll(async () => {
  t = await createTestDb('postgres');
});
afterEach(async () => {
  await Promise.all(leases.splice(0).map((lease) => lease.stop()));
});
afterAll(() => t.cleanup());

async function startLease(): Promise<{ lease: Lease; released: () => number }> {
  let released = 0;
  const lease = new Lease(t.db, silentLogger(), LEASE_MS, (count) => (released += count));
  leases.push(lease);
  await lease.start();
  return { lease, released: () => released };
}

/** A call held by `holder`, as the match statement creates it. */
async function insertHeldCall(holder: string): Promise<{ id: string }> {
  const eventId = `lease-event-${++event}`;
  await insertEvents(t.db, [testItemEvent(eventId)]);
  const { rows } = await t.db.query<{ id: string }>(
    `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, held_by)
     VALUES ($1, 1, 'item', 'create', $2) RETURNING id`,
    [eventId, holder],
  );
  return rows[0]!;
}

async function holdOf(id: string): Promise<{ heldBy: string | null; due: boolean }> {
  const { rows } = await t.db.query<{ held_by: string | null; due: boolean }>(
    `SELECT held_by, enqueued_at = '-infinity'::timestamptz AS due FROM webhook_calls WHERE id = $1`,
    [id],
  );
  return { heldBy: rows[0]!.held_by, due: rows[0]!.due };
}

/** Resolves after `count` more heartbeats of `lease` reached Postgres. */
async function heartbeats(lease: Lease, count: number): Promise<void> {
  const beatAt = async (): Promise<string> => {
    const { rows } = await t.db.query<{ at: string }>(
      'SELECT heartbeat_at::text AS at FROM delivery_leases WHERE id = $1',
      [lease.id],
    );
    return rows[0]!.at;
  };
  for (let i = 0; i < count; i++) {
    const before = await beatAt();
    await waitFor(async () => expect(await beatAt()).not.toBe(before), { timeout: 5000 });
  }
}

describe('the lease: calls held in Postgres but not in memory', () => {
  it('releases, as due, the calls Postgres says it holds that this process does not have', async () => {
    const { lease, released } = await startLease();
    const [kept] = await lease.create(async () => [await insertHeldCall(lease.id)]);
    // An outcome Postgres forgot: the call is held again, by a process that is done with it.
    const forgotten = await insertHeldCall(lease.id);
    await waitFor(async () =>
      expect(await holdOf(forgotten.id)).toEqual({ heldBy: null, due: true }),
    );
    expect(released()).toBe(1);
    // The call still in memory stays held, beat after beat.
    await heartbeats(lease, 2);
    expect(await holdOf(kept!.id)).toEqual({ heldBy: lease.id, due: false });
    // Once let go without its outcome reaching Postgres, it is released too.
    lease.letGo([kept!.id]);
    await waitFor(async () => expect(await holdOf(kept!.id)).toEqual({ heldBy: null, due: true }));
    expect(released()).toBe(2);
  });

  it('leaves alone the calls of a statement that committed and has not answered yet', async () => {
    const { lease, released } = await startLease();
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let committed!: { id: string };
    const creating = lease.create(async () => {
      committed = await insertHeldCall(lease.id);
      await answered; // the reply on its way
      return [committed];
    });
    await waitFor(() => expect(committed).toBeDefined());
    await heartbeats(lease, 2);
    expect(await holdOf(committed.id)).toEqual({ heldBy: lease.id, due: false });
    answer();
    await creating;
    await heartbeats(lease, 2);
    expect(await holdOf(committed.id)).toEqual({ heldBy: lease.id, due: false });
    expect(released()).toBe(0);
  });

  it('releases the calls of a statement that committed but whose reply was lost', async () => {
    const { lease } = await startLease();
    let committed!: { id: string };
    const creating = lease.create(async () => {
      committed = await insertHeldCall(lease.id);
      throw new Error('Connection terminated unexpectedly');
    });
    await expect(creating).rejects.toThrow('Connection terminated');
    await waitFor(async () =>
      expect(await holdOf(committed.id)).toEqual({ heldBy: null, due: true }),
    );
  });

  it("never touches another process's calls", async () => {
    const { lease } = await startLease();
    const { lease: other } = await startLease();
    const [theirs] = await other.create(async () => [await insertHeldCall(other.id)]);
    await heartbeats(lease, 2);
    expect(await holdOf(theirs!.id)).toEqual({ heldBy: other.id, due: false });
  });
});
