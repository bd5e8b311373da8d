/** API.md §4.4: pending (not yet answered), success, failed, rescheduled (retry planned). */
export type WebhookCallStatus = 'pending' | 'success' | 'failed' | 'rescheduled';
export const WEBHOOK_CALL_STATUSES: readonly WebhookCallStatus[] = [
  'pending',
  'success',
  'failed',
  'rescheduled',
];

/**
 * The webhook_call resource of API.md §4.4 as ingest serves it and the console reads it.
 * `event_id` (the producer's event id) and `failure_reason` are Herald's extensions.
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
  };
  relationships: { webhook: { data: { type: 'webhook'; id: string } } };
}
