import { describe, expect } from 'vitest';
import { testItemEvent, testWebhookInput } from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import {
  claimFlowCall,
  createWebhookCalls,
  findEvents,
  insertEvents,
  insertWebhook,
  placeFlowCalls,
  recordFlowOutcomes,
  releaseWebhookCalls,
  renewLease,
  type Db,
  type WebhookInput,
} from '@herald/store';

let n = 0;

const it = integrationTest();

it.beforeAll(async ({ db }) => {
  await renewLease(db, { id: 'holder', host: 'test', pid: 1 });
});

/**
 * A webhook with these flow settings and two versions of one record in its lane: the first
 * call placed and claimed by its attempt, the second placed behind it (parked). Returns both
 * calls and the second's event.
 */
async function laneOfTwo(
  db: Db,
  settings: Partial<WebhookInput>,
): Promise<[string, string, string]> {
  const webhook = await insertWebhook(db, testWebhookInput(settings));
  const record = `rec-${n++}`;
  const events = [1, 2].map((version) =>
    testItemEvent(`${record}-v${version}`, {
      entityId: record,
      occurredAt: new Date(Date.UTC(2026, 10, 24, 12, version)),
      entity: { type: 'item', id: record, meta: { current_version: String(version) } },
    }),
  );
  await insertEvents(db, events);
  const calls: string[] = [];
  for (const [event] of await Promise.all(events.map((e) => findEvents(db, [e.id])))) {
    const placement = await db.transaction(async (tx) => {
      const [call] = await createWebhookCalls(
        tx,
        [{ event: event!, webhookIds: [webhook.id] }],
        'holder',
      );
      calls.push(call!.id);
      return placeFlowCalls(tx, [{ id: call!.id, webhook: call!.webhook!, event: event! }]);
    });
    if (calls.length === 1) {
      expect(placement.ready).toEqual([calls[0]]);
      expect(await claimFlowCall(db, calls[0]!, true, 60_000)).toMatchObject({ state: 'go' });
    } else {
      expect(placement.parked).toBe(1);
    }
  }
  return [calls[0]!, calls[1]!, events[1]!.id];
}

/** Records a success for `callId` and releases its lane, as the workers' outcome batch does. */
const succeed = (db: Db, callId: string) =>
  recordFlowOutcomes(
    db,
    [callId],
    async (tx) => {
      await tx.query(`UPDATE webhook_calls SET status = 'success', held_by = NULL WHERE id = $1`, [
        callId,
      ]);
    },
    'holder',
  );

const claimOf = async (db: Db, callId: string) =>
  (
    await db.query<{ claimed_at: Date | null; held_by: string | null }>(
      'SELECT claimed_at, held_by FROM webhook_calls WHERE id = $1',
      [callId],
    )
  ).rows[0]!;

describe('an outcome releasing the next call of a lane', () => {
  it('claims it for its holder in a lane no event can join, with its event; letting it go unclaims it', async ({
    db,
  }) => {
    const [first, next, nextEvent] = await laneOfTwo(db, { deliveryOrder: 'per_entity' });
    const released = await succeed(db, first);
    expect(released).toEqual([
      expect.objectContaining({
        id: next,
        eventId: nextEvent,
        eventIds: [nextEvent],
        claimed: true,
      }),
    ]);
    const held = await claimOf(db, next);
    expect(held.held_by).toBe('holder');
    expect(held.claimed_at).not.toBeNull();
    // Deferred unsent (its webhook at its limit): its job must be able to claim it again.
    await releaseWebhookCalls(db, 'holder', [next], false);
    expect(await claimOf(db, next)).toEqual({ claimed_at: null, held_by: null });
  });

  it('leaves it unclaimed where events may still join it (coalesce), for its attempt to claim', async ({
    db,
  }) => {
    const [first, next] = await laneOfTwo(db, {
      deliveryOrder: 'per_entity',
      coalesceEvents: true,
    });
    // The second version's call is parked: events that come meanwhile join it.
    const released = await succeed(db, first);
    expect(released).toEqual([expect.objectContaining({ id: next, claimed: false })]);
    const held = await claimOf(db, next);
    expect(held.held_by).toBe('holder');
    expect(held.claimed_at).toBeNull();
  });
});
