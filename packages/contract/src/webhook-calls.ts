/**
 * docs/api.md, The webhook call resource: pending (not yet answered), success, failed, rescheduled
 * (retry planned).
 */
export type WebhookCallStatus = 'pending' | 'success' | 'failed' | 'rescheduled';
export const WEBHOOK_CALL_STATUSES: readonly WebhookCallStatus[] = [
  'pending',
  'success',
  'failed',
  'rescheduled',
];

/**
 * The webhook_call resource (docs/api.md, The webhook call resource) as ingest serves it and the
 * console reads it. `event_id` (the producer's event id) and `failure_reason` are Herald's
 * extensions.
 */
export interface WebhookCallResource {
  type: 'webhook_call';
  id: string;
  attributes: {
    entity_type: string;
    event_type: string;
    created_at: string;
    request_url: string | null;
    request_headers: Record<string, string> | null;
    request_payload: string | null;
    response_status: number | null;
    response_headers: Record<string, string> | null;
    response_payload: string | null;
    attempted_auto_retries_count: number;
    last_sent_at: string | null;
    next_retry_at: string | null;
    status: WebhookCallStatus;
    failure_reason: string | null;
    event_id: string;
    /**
     * Extension, flow control: the events the call carries, in the order they reached it (more than
     * one when it coalesces or batches); `[event_id]` for every other call.
     */
    event_ids: string[];
  };
  relationships: { webhook: { data: { type: 'webhook'; id: string } } };
}

/**
 * What made an attempt (extension): the call's first attempt (or its re-enqueue after Redis lost
 * it), an automatic retry, a resend through the API, and, for the recovery jobs and test sends,
 * a bulk resend, a replay or a test.
 */
export type AttemptTrigger = 'first' | 'retry' | 'resend' | 'bulk_resend' | 'replay' | 'test';
export const ATTEMPT_TRIGGERS: readonly AttemptTrigger[] = [
  'first',
  'retry',
  'resend',
  'bulk_resend',
  'replay',
  'test',
];

/** One attempt of a call (extension): GET /webhook_calls/:id/attempts. */
export interface WebhookCallAttemptResource {
  type: 'webhook_call_attempt';
  /** `<call id>-<number>`. */
  id: string;
  attributes: {
    number: number;
    trigger: AttemptTrigger;
    /** The call's status this attempt left it in. */
    outcome: Exclude<WebhookCallStatus, 'pending'>;
    started_at: string;
    /** null only for an attempt recorded before attempts had their own rows. */
    duration_ms: number | null;
    request_url: string;
    request_headers: Record<string, string>;
    request_payload: string | null;
    response_status: number | null;
    response_headers: Record<string, string> | null;
    response_payload: string | null;
    failure_reason: string | null;
  };
  relationships: { webhook_call: { data: { type: 'webhook_call'; id: string } } };
}

/** A webhook's health over a window (extension): GET /webhooks/:id/stats, GET /webhook_stats. */
export interface WebhookStatsResource {
  type: 'webhook_stats';
  /** The webhook's id. */
  id: string;
  attributes: {
    window: '1h' | '24h' | '7d' | '30d';
    /** The buckets' size: minutes for 1h, hours for the others. */
    granularity: 'minute' | 'hour';
    /** Start of the first bucket (the window widened to a whole bucket), and now. */
    from: string;
    to: string;
    attempts: { total: number; success: number; failure: number };
    /** Calls that ended in the window, by final status. */
    calls: { succeeded: number; failed: number };
    /** Successful attempts / attempts; null without attempts. */
    success_rate: number | null;
    /** Attempt durations, estimated from ranges; null without attempts. */
    latency_ms: { p50: number | null; p95: number | null; p99: number | null; mean: number | null };
    last_success_at: string | null;
    last_failure_at: string | null;
    /** Attempts that failed since the last success. */
    failure_streak: number;
    backlog: { pending: number; rescheduled: number; oldest_age_seconds: number | null };
    /**
     * The circuit breaker: `closed`; `open` (calls wait until `open_until`); `half_open` (the
     * cool-down is over, one probe decides). `failures`: the run of tripping failures.
     */
    circuit: {
      state: 'closed' | 'open' | 'half_open';
      open_until: string | null;
      failures: number;
    };
    /** Per bucket with attempts, oldest first (only GET /webhooks/:id/stats). */
    buckets?: {
      start: string;
      attempts_success: number;
      attempts_failure: number;
      calls_succeeded: number;
      calls_failed: number;
      latency_ms_p50: number | null;
    }[];
  };
  relationships: { webhook: { data: { type: 'webhook'; id: string } } };
}

/** The id of the sample event that previews and test sends use when no stored event is named. */
export const SAMPLE_EVENT_ID = 'sample-event';
