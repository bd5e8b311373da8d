import { COALESCED_ENTITY_TYPES, type WebhookEntityType } from '@herald/contract';
import type { Db, Queryable } from './db.js';
import type { StoredEvent } from './events.js';
import { versionKey } from './records.js';
import type { WebhookRecord } from './webhooks.js';

/*
 * Flow control (migration 023; docs/architecture.md, Ordered, coalesced and batched calls): the
 * calls of a webhook with `delivery_order: per_entity`, `coalesce` or `batch` live in lanes, and
 * every change to a lane happens under its lock. Placing a new event (placeFlowCalls, in the
 * match's transaction) decides whether it joins a call still waiting, is too late to send, or
 * gets a call of its own that goes now or waits; an attempt claims its call first
 * (claimFlowCall); the outcome that finishes a call releases the next one of its lane
 * (recordFlowOutcomes' transaction).
 */

type FlowSettings = Pick<WebhookRecord, 'deliveryOrder' | 'coalesceEvents' | 'batch'>;

/** Whether a webhook's calls go through lanes at all. */
export const hasFlowControl = (webhook: FlowSettings): boolean =>
  webhook.deliveryOrder === 'per_entity' || webhook.coalesceEvents || webhook.batch !== null;

/** Whether a lane's calls go one at a time, in order (ordered, or batches). */
export const isSequential = (webhook: FlowSettings): boolean =>
  webhook.deliveryOrder === 'per_entity' || webhook.batch !== null;

/** An event's entity, as lanes and batches key it: `type:id`, or the type alone without an id. */
export const entityKey = (event: Pick<StoredEvent, 'entityType' | 'entityId'>): string =>
  event.entityId === null ? event.entityType : `${event.entityType}:${event.entityId}`;

/** The lane of an event's call: its entity's, or the webhook's one lane when it batches. */
const laneOf = (webhook: FlowSettings, event: StoredEvent): string =>
  webhook.batch !== null ? '' : entityKey(event);

/** Whether a newer event of the same entity may replace this one's state. */
export const isCoalescable = (event: Pick<StoredEvent, 'entityType'>): boolean =>
  COALESCED_ENTITY_TYPES.includes(event.entityType as WebhookEntityType);

/** Where an event stands in its producer's order: occurred_at, then current_version, then seq. */
export interface Position {
  at: Date;
  version: string;
  seq: string;
}

export function eventPosition(event: StoredEvent): Position {
  const meta = (event.entity as { meta?: { current_version?: unknown } } | null)?.meta;
  const version = meta?.current_version;
  return {
    at: event.occurredAt,
    version:
      typeof version === 'string' || typeof version === 'number' ? versionKey(String(version)) : '',
    seq: event.seq,
  };
}

/** Orders positions as Postgres does (lane_version is COLLATE "C": by code unit here too). */
function comparePositions(a: Position, b: Position): number {
  const at = a.at.getTime() - b.at.getTime();
  if (at !== 0) return at;
  if (a.version !== b.version) return a.version < b.version ? -1 : 1;
  if (a.seq.length !== b.seq.length) return a.seq.length - b.seq.length;
  return a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0;
}

/** Events in their producer's order. */
export const inProducerOrder = (events: readonly StoredEvent[]): StoredEvent[] =>
  [...events].sort((a, b) => comparePositions(eventPosition(a), eventPosition(b)));

/** A batch's lane_at: batches are ordered by lane_seq alone (herald_flow_batch_order). */
const BATCH_AT = new Date(0);

/** A call createWebhookCalls just made for a webhook with flow control, before placing. */
export interface UnplacedCall {
  id: string;
  webhook: WebhookRecord;
  event: StoredEvent;
}

/** What placing decided for the new calls. */
export interface Placement {
  /** Calls that go now: their first attempt is made by this process (still held by it). */
  ready: string[];
  /** Batches whose window is open: a job is due at `dueAt`. */
  due: { id: string; webhookId: string; dueAt: Date }[];
  /** Events that joined a call already waiting (their own new call was removed). */
  joined: number;
  /** Calls waiting for an earlier call of their lane. */
  parked: number;
  /** Events older than one of their entity already sent: ended without sending. */
  superseded: number;
}

interface LaneState {
  webhook: WebhookRecord;
  lane: string;
  /** The lane's newest call that may still take events (unclaimed, unfinished). */
  open: {
    id: string;
    eventIds: string[];
    entryKeys: string[];
    dueAt: Date | null;
    position: Position;
    changed: boolean;
  } | null;
  /** The lane's first unfinished call's position (new calls count once placed). */
  head: Position | null;
  /** The position of the lane's latest call sent or being sent. */
  sent: Position | null;
}

interface LaneRow extends Record<string, unknown> {
  open_id: string | null;
  open_event_ids: string[] | null;
  open_entry_keys: string[] | null;
  open_due_at: Date | null;
  open_at: Date | null;
  open_version: string | null;
  open_seq: string | null;
  head_at: Date | null;
  head_version: string | null;
  head_seq: string | null;
  sent_at: Date | null;
  sent_version: string | null;
  sent_seq: string | null;
}

const positionOf = (at: Date | null, version: string | null, seq: string | null) =>
  at === null ? null : { at, version: version ?? '', seq: seq ?? '0' };

/** The lane's order, as the partial indexes of migration 023 store it. */
const ORDER = 'c.lane_at, c.lane_version, c.lane_seq, c.id';
const ORDER_DESC = 'c.lane_at DESC, c.lane_version DESC, c.lane_seq DESC, c.id DESC';
const IN_LANE = 'c.webhook_id = l.w AND c.lane = l.lane AND c.lane IS NOT NULL';

/**
 * Places the new calls of webhooks with flow control, in the transaction that made them (so a
 * crash can never leave a call outside its lane). Under each lane's lock, in the producer's
 * order of the events:
 * - an event joins the lane's newest call that still takes events (coalescing: the call waits
 *   and has not been claimed; batching: its window is open and it has room, or it lists the
 *   entity and coalesces) and its own new call is deleted;
 * - otherwise, in an ordered lane, an event older than the lane's latest call sent is
 *   superseded: its call ends failed, unsent, saying which event overtook it;
 * - otherwise the call is the lane's: it goes now, waits for an earlier unfinished call of its
 *   lane (parked), or, a batch, waits for its window to end.
 * Calls that do not go now are let go by `holder` (held_by NULL).
 */
export async function placeFlowCalls(
  tx: Queryable,
  calls: readonly UnplacedCall[],
  now = new Date(),
): Promise<Placement> {
  const placement: Placement = { ready: [], due: [], joined: 0, parked: 0, superseded: 0 };
  if (calls.length === 0) return placement;
  // Lanes, each with its new calls in the producer's order.
  const lanes = new Map<string, { webhook: WebhookRecord; lane: string; calls: UnplacedCall[] }>();
  for (const call of calls) {
    const lane = laneOf(call.webhook, call.event);
    const key = `${call.webhook.id}/${lane}`;
    let entry = lanes.get(key);
    if (!entry) lanes.set(key, (entry = { webhook: call.webhook, lane, calls: [] }));
    entry.calls.push(call);
  }
  const entries = [...lanes.values()];
  for (const entry of entries) {
    entry.calls.sort((a, b) => comparePositions(eventPosition(a.event), eventPosition(b.event)));
  }
  const webhooks = entries.map((e) => e.webhook.id);
  const laneKeys = entries.map((e) => e.lane);
  await tx.query('SELECT herald_lock_flow_lanes($1::bigint[], $2::text[])', [webhooks, laneKeys]);
  // Batches are ordered by when they open, under the lock: a number of the sequence, of which
  // this placement's batches take the next 2^20.
  let batches: (() => string) | null = null;
  if (entries.some((entry) => entry.webhook.batch)) {
    const { rows } = await tx.query<{ n: string }>(
      "SELECT nextval('herald_flow_batch_order')::text AS n",
    );
    let next = BigInt(rows[0]!.n) << 20n;
    batches = () => String(next++);
  }
  const { rows } = await tx.query<LaneRow & { n: string }>(
    {
      name: 'herald.flow.lanes',
      text: `SELECT l.n, o.id AS open_id, o.event_ids AS open_event_ids,
         o.entry_keys AS open_entry_keys, o.due_at AS open_due_at, o.lane_at AS open_at,
         o.lane_version AS open_version, o.lane_seq AS open_seq,
         h.lane_at AS head_at, h.lane_version AS head_version, h.lane_seq AS head_seq,
         s.lane_at AS sent_at, s.lane_version AS sent_version, s.lane_seq AS sent_seq
       FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS l(w, lane, n)
       LEFT JOIN LATERAL (
         SELECT c.id, c.event_ids, c.entry_keys, c.due_at, c.lane_at, c.lane_version, c.lane_seq
         FROM webhook_calls c
         WHERE ${IN_LANE} AND c.status IN ('pending', 'rescheduled') AND c.claimed_at IS NULL
         ORDER BY ${ORDER_DESC} LIMIT 1) o ON true
       LEFT JOIN LATERAL (
         SELECT c.lane_at, c.lane_version, c.lane_seq FROM webhook_calls c
         WHERE ${IN_LANE} AND c.status IN ('pending', 'rescheduled')
         ORDER BY ${ORDER} LIMIT 1) h ON true
       LEFT JOIN LATERAL (
         SELECT c.lane_at, c.lane_version, c.lane_seq FROM webhook_calls c
         WHERE ${IN_LANE} AND (c.claimed_at IS NOT NULL OR c.attempts_count > 0)
         ORDER BY ${ORDER_DESC} LIMIT 1) s ON true`,
    },
    [webhooks, laneKeys],
  );
  // One row per call (UPDATE … FROM would take one of several at random).
  const updates = new Map<string, Record<string, unknown>>();
  const deleted: string[] = [];
  for (const row of rows) {
    const entry = entries[Number(row.n) - 1]!;
    const state: LaneState = {
      webhook: entry.webhook,
      lane: entry.lane,
      open:
        row.open_id === null
          ? null
          : {
              id: row.open_id,
              eventIds: row.open_event_ids ?? [],
              entryKeys: row.open_entry_keys ?? [],
              dueAt: row.open_due_at,
              position: positionOf(row.open_at, row.open_version, row.open_seq)!,
              changed: false,
            },
      head: positionOf(row.head_at, row.head_version, row.head_seq),
      sent: positionOf(row.sent_at, row.sent_version, row.sent_seq),
    };
    for (const call of entry.calls) {
      placeOne(state, call, now, batches, placement, updates, deleted);
    }
    writeOpen(state, updates);
  }
  if (updates.size > 0) {
    // `keep`: an existing call that took events: only its events, position and window change.
    await tx.query(
      {
        name: 'herald.flow.place',
        text: `UPDATE webhook_calls c SET lane = coalesce(x.lane, c.lane), lane_at = x.lane_at,
           lane_version = x.lane_version, lane_seq = x.lane_seq, event_ids = x.event_ids,
           entry_keys = x.entry_keys, due_at = x.due_at,
           enqueued_at = CASE WHEN x.keep THEN c.enqueued_at ELSE x.enqueued_at END,
           held_by = CASE WHEN x.keep OR x.held THEN c.held_by END,
           status = coalesce(x.status, c.status),
           failure_reason = coalesce(x.failure_reason, c.failure_reason)
         FROM json_to_recordset($1::json) AS x(id bigint, lane text, lane_at timestamptz,
           lane_version text, lane_seq bigint, event_ids text[], entry_keys text[],
           due_at timestamptz, enqueued_at timestamptz, held boolean, keep boolean,
           status text, failure_reason text)
         WHERE c.id = x.id`,
      },
      [JSON.stringify([...updates.values()])],
    );
  }
  if (deleted.length > 0) {
    await tx.query('DELETE FROM webhook_calls WHERE id = ANY($1::bigint[])', [deleted]);
  }
  return placement;
}

/** The row of the lane's open call, once events joined it (the call's own row, if placed now). */
function writeOpen(state: LaneState, updates: Map<string, Record<string, unknown>>): void {
  const open = state.open;
  if (!open?.changed) return;
  const taken = {
    event_ids: open.eventIds,
    entry_keys: state.webhook.batch ? open.entryKeys : null,
    lane_at: open.position.at.toISOString(),
    lane_version: open.position.version,
    lane_seq: open.position.seq,
    due_at: open.dueAt?.toISOString() ?? null,
  };
  const placed = updates.get(open.id);
  if (placed) Object.assign(placed, taken);
  else updates.set(open.id, { id: open.id, ...taken, keep: true });
  open.changed = false;
}

/** Decides one new call (see placeFlowCalls); updates the lane's state as it goes. */
function placeOne(
  state: LaneState,
  call: UnplacedCall,
  now: Date,
  /** The next batch's place in its lane (batched webhooks). */
  batches: (() => string) | null,
  placement: Placement,
  updates: Map<string, Record<string, unknown>>,
  deleted: string[],
): void {
  const { webhook } = state;
  // A batch's place is the order it was opened in (herald_flow_batch_order, given when it opens
  // below): batches go in that order, whatever the events they gather.
  const position = webhook.batch
    ? { at: BATCH_AT, version: '', seq: '' }
    : eventPosition(call.event);
  const entity = entityKey(call.event);
  const coalesces = webhook.coalesceEvents && isCoalescable(call.event);
  const open = state.open;
  const joins =
    open !== null &&
    (webhook.batch
      ? open.dueAt !== null &&
        open.dueAt > now &&
        (open.entryKeys.length < webhook.batch.max_events ||
          (coalesces && open.entryKeys.includes(entity)))
      : coalesces);
  if (joins) {
    open.eventIds.push(call.event.id);
    if (webhook.batch && !(coalesces && open.entryKeys.includes(entity))) {
      open.entryKeys.push(entity);
    }
    if (!webhook.batch && comparePositions(position, open.position) > 0) open.position = position;
    // A full batch takes no more: it goes at its window's end all the same.
    open.changed = true;
    deleted.push(call.id);
    placement.joined++;
    return;
  }
  if (webhook.batch) position.seq = batches!();
  const base = {
    id: call.id,
    lane: state.lane,
    lane_at: position.at.toISOString(),
    lane_version: position.version,
    lane_seq: position.seq,
    event_ids: [call.event.id],
    keep: false,
  };
  if (
    webhook.deliveryOrder === 'per_entity' &&
    !webhook.batch &&
    state.sent !== null &&
    comparePositions(position, state.sent) <= 0
  ) {
    updates.set(call.id, {
      ...base,
      entry_keys: null,
      due_at: null,
      enqueued_at: now.toISOString(),
      held: false,
      status: 'failed',
      failure_reason:
        'superseded: a later event of this entity was already sent (delivery_order per_entity)',
    });
    placement.superseded++;
    return;
  }
  const waits =
    isSequential(webhook) && state.head !== null && comparePositions(state.head, position) < 0;
  const dueAt = webhook.batch ? new Date(now.getTime() + webhook.batch.window_ms) : null;
  const enqueuedAt = waits ? 'infinity' : (dueAt ?? now).toISOString();
  updates.set(call.id, {
    ...base,
    entry_keys: webhook.batch ? [entity] : null,
    due_at: dueAt?.toISOString() ?? null,
    enqueued_at: enqueuedAt,
    held: !waits && dueAt === null,
    status: null,
    failure_reason: null,
  });
  if (waits) placement.parked++;
  else if (dueAt) placement.due.push({ id: call.id, webhookId: webhook.id, dueAt });
  else placement.ready.push(call.id);
  if (state.head === null || comparePositions(position, state.head) < 0) state.head = position;
  if (webhook.coalesceEvents || webhook.batch) {
    // The call that took events so far takes no more: its row says what it took.
    writeOpen(state, updates);
    state.open = {
      id: call.id,
      eventIds: base.event_ids,
      entryKeys: webhook.batch ? [entity] : [],
      dueAt,
      position,
      changed: false,
    };
  }
}

/** What an attempt's claim said (herald_claim_flow_call). */
export type FlowClaim =
  | { state: 'go'; eventIds: string[]; batch: boolean }
  | { state: 'done' | 'parked' | 'free' }
  | { state: 'busy' | 'window'; waitUntil: Date };

/**
 * Claims a lane's call for an attempt (see herald_claim_flow_call): it goes, or waits (parked
 * behind an earlier call, in its batch window, or while another attempt's claim lasts), or is
 * finished. `busyMs`: how long a claim keeps a second attempt waiting (longer than an attempt).
 */
export async function claimFlowCall(
  db: Queryable,
  callId: string,
  sequential: boolean,
  busyMs: number,
): Promise<FlowClaim> {
  const { rows } = await db.query<{
    state: 'go' | 'done' | 'parked' | 'free' | 'busy' | 'window';
    event_ids: string[] | null;
    wait_until: Date | null;
    lane: string | null;
  }>(
    {
      name: 'herald.flow.claim',
      text: 'SELECT * FROM herald_claim_flow_call($1, $2, $3)',
    },
    [callId, sequential, Math.round(busyMs)],
  );
  const row = rows[0]!;
  switch (row.state) {
    case 'go':
      // A batch's lane is its webhook's one lane ('').
      return { state: 'go', eventIds: row.event_ids ?? [], batch: row.lane === '' };
    case 'busy':
    case 'window':
      return { state: row.state, waitUntil: row.wait_until ?? new Date() };
    case 'done':
    case 'parked':
    case 'free':
      return { state: row.state };
  }
}

/** A lane's call released by an outcome: due now, or at its batch window's end. */
export interface ReleasedCall {
  id: string;
  webhookId: string;
  dueAt: Date | null;
}

/** A call an outcome released (herald_release_flow_lanes), with what its attempt needs. */
export interface ReleasedLaneCall extends ReleasedCall {
  eventId: string;
  /** The events it carries. */
  eventIds: string[];
  /**
   * Claimed by the release (held here, in a lane no event can join: migration 024): its attempt
   * goes without a claim of its own.
   */
  claimed: boolean;
}

/**
 * Writes attempts' outcomes of lane calls and releases the next calls of their lanes, in one
 * transaction: `write` records the outcomes (recordWebhookCallAttempts), then the release takes
 * each lane's lock and sees them. `finished`: the calls whose outcome is final (success,
 * failed); without any, the outcomes are written alone.
 *
 * The lanes are not locked before the write (migration 024): the write changes only calls being
 * attempted, which no placement or claim changes, so the locks are held for the release alone,
 * not through the write. (A claim of a call whose claim lapsed while its outcome is written may
 * still meet the write the other way round: Postgres ends that deadlock, and the write, retried
 * by its caller, stands.)
 */
export async function recordFlowOutcomes(
  db: Db,
  finished: readonly string[],
  write: (tx: Queryable) => Promise<void>,
  /** The lease that holds the released calls due now (the caller attempts them in memory). */
  holder: string | null = null,
): Promise<ReleasedLaneCall[]> {
  if (finished.length === 0) {
    await write(db);
    return [];
  }
  return db.transaction(async (tx) => {
    await write(tx);
    const { rows } = await tx.query<{
      id: string;
      webhook_id: string;
      due_at: Date | null;
      event_id: string;
      event_ids: string[] | null;
      claimed: boolean | null;
    }>('SELECT * FROM herald_release_flow_lanes($1::bigint[], $2)', [finished, holder]);
    return rows.map((row) => ({
      id: row.id,
      webhookId: row.webhook_id,
      dueAt: row.due_at,
      eventId: row.event_id,
      eventIds: row.event_ids ?? [row.event_id],
      claimed: row.claimed === true,
    }));
  });
}

/**
 * The sweeper's guard: lanes whose first unfinished call is parked though nothing is before it
 * (which no path leaves behind, but a lane must never stop for good) have it released; returns
 * the calls, for jobs to be enqueued. Reads at most `limit` parked calls per call, from `after`.
 */
export async function releaseStuckFlowCalls(db: Queryable, limit: number): Promise<ReleasedCall[]> {
  const { rows } = await db.query<{ id: string; webhook_id: string; due_at: Date | null }>(
    `UPDATE webhook_calls u SET enqueued_at = greatest(now(), coalesce(u.due_at, now()))
     FROM (
       SELECT p.id FROM webhook_calls p
       WHERE p.status IN ('pending', 'rescheduled') AND p.enqueued_at = 'infinity'
         AND p.lane IS NOT NULL
         AND NOT EXISTS (
           SELECT 1 FROM webhook_calls c
           WHERE c.webhook_id = p.webhook_id AND c.lane = p.lane AND c.lane IS NOT NULL
             AND c.status IN ('pending', 'rescheduled')
             AND (c.lane_at, c.lane_version, c.lane_seq, c.id)
               < (p.lane_at, p.lane_version, p.lane_seq, p.id))
       LIMIT $1
     ) stuck
     WHERE u.id = stuck.id AND u.enqueued_at = 'infinity'
     RETURNING u.id, u.webhook_id, u.due_at`,
    [limit],
  );
  return rows.map((row) => ({ id: row.id, webhookId: row.webhook_id, dueAt: row.due_at }));
}
