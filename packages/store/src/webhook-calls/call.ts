import type { WebhookCallStatus } from '@herald/contract';
import type { StoredEvent } from '../events.js';

// A call of the delivery log as the store returns it, and the columns and row it is read from
// (write.ts, list.ts).

// The statuses of docs/api.md (The webhook call resource) are the contract's (the console lists
// them too).
export {
  WEBHOOK_CALL_STATUSES,
  type AttemptTrigger,
  type WebhookCallStatus,
} from '@herald/contract';

// Statements that find rows by key and also test their state write the state test as
// `(…) IS TRUE`. Written plainly (`matched_at IS NULL`, `status = 'pending'`), the test matches
// the predicate of a partial index (events_unmatched, webhook_calls_unfinished), which the
// statistics, read while few rows were unfinished, make look nearly empty: the planner then
// scans that index whole and filters by key, so every match or drop costs O(backlog) exactly
// when a backlog builds up (EXPLAIN ANALYZE with 100,000 unmatched events: 27 ms, not 0.07).
// `IS TRUE` means the same for these NOT NULL or tested-for-NULL columns and hides the
// predicate, so the key's index is used.

/**
 * What one sending asked and was answered: a call keeps its latest sending's, an attempt its own.
 * An attempt was always sent: it sets `Unsent` to never, so its URL and headers are never null.
 */
export interface ExchangeRecord<Unsent = null> {
  requestUrl: string | Unsent;
  requestHeaders: Record<string, string> | Unsent;
  requestPayload: string | null;
  responseStatus: number | null;
  responseHeaders: Record<string, string> | null;
  responsePayload: string | null;
  failureReason: string | null;
}

/** The columns an ExchangeRecord is read from (webhook_calls, webhook_call_attempts). */
export interface ExchangeRow<Unsent = null> extends Record<string, unknown> {
  request_url: string | Unsent;
  request_headers: Record<string, string> | Unsent;
  request_payload: string | null;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_payload: string | null;
  failure_reason: string | null;
}

export const toExchange = <Unsent = null>(
  row: ExchangeRow<NoInfer<Unsent>>,
): ExchangeRecord<Unsent> => ({
  requestUrl: row.request_url,
  requestHeaders: row.request_headers,
  requestPayload: row.request_payload,
  responseStatus: row.response_status,
  responseHeaders: row.response_headers,
  responsePayload: row.response_payload,
  failureReason: row.failure_reason,
});

export interface WebhookCallRecord extends ExchangeRecord {
  id: string;
  /** The stored event's id; for a test call, the id of the event it carries. */
  eventId: string;
  /** A test call's own event (POST /webhooks/:id/test); null for the calls events make. */
  testEvent: StoredEvent | null;
  webhookId: string;
  entityType: string;
  eventType: string;
  status: WebhookCallStatus;
  createdAt: Date;
  attemptedAutoRetriesCount: number;
  lastSentAt: Date | null;
  nextRetryAt: Date | null;
  /** The events it carries, in the order they reached it (flow control: several; else [eventId]). */
  eventIds: string[];
  /** Its lane, for a webhook with flow control (migration 023); null for every other call. */
  lane: string | null;
}

export interface WebhookCallRow extends ExchangeRow {
  id: string;
  event_id: string;
  test_event: TestEventJson | null;
  webhook_id: string;
  entity_type: string;
  event_type: string;
  status: WebhookCallStatus;
  created_at: Date;
  attempted_auto_retries_count: number;
  last_sent_at: Date | null;
  next_retry_at: Date | null;
  event_ids: string[];
  lane: string | null;
}

export const CALL_COLUMNS = `id, coalesce(event_id, test_event->>'id') AS event_id, test_event, webhook_id, entity_type, event_type, status, created_at, request_url,
  request_headers, request_payload, response_status, response_headers, response_payload,
  failure_reason, attempted_auto_retries_count, last_sent_at, next_retry_at,
  coalesce(event_ids, ARRAY[coalesce(event_id, test_event->>'id')]) AS event_ids, lane`;

export const toCall = (row: WebhookCallRow): WebhookCallRecord => ({
  id: row.id,
  eventId: row.event_id,
  testEvent: row.test_event ? fromTestEventJson(row.test_event) : null,
  webhookId: row.webhook_id,
  entityType: row.entity_type,
  eventType: row.event_type,
  status: row.status,
  createdAt: row.created_at,
  ...toExchange(row),
  attemptedAutoRetriesCount: row.attempted_auto_retries_count,
  lastSentAt: row.last_sent_at,
  nextRetryAt: row.next_retry_at,
  eventIds: row.event_ids,
  lane: row.lane,
});

/** A StoredEvent as a test call keeps it (webhook_calls.test_event): its dates as ISO strings. */
type TestEventJson = Omit<StoredEvent, 'occurredAt' | 'acceptedAt' | 'matchedAt'> & {
  occurredAt: string;
  acceptedAt: string;
  matchedAt: string | null;
};

function fromTestEventJson(json: TestEventJson): StoredEvent {
  return {
    ...json,
    occurredAt: new Date(json.occurredAt),
    acceptedAt: new Date(json.acceptedAt),
    matchedAt: json.matchedAt === null ? null : new Date(json.matchedAt),
  };
}

export const isCallId = (id: string): boolean => /^[1-9]\d{0,17}$/.test(id);
