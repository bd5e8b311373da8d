import type { WebhookCallResource } from '@herald/contract';
import type { WebhookCallRecord } from '@herald/store';

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/**
 * The webhook_call resource (docs/api.md, The webhook call resource; `event_id`,
 * `event_ids` and `failure_reason` are extensions).
 */
export function serializeWebhookCall(call: WebhookCallRecord): WebhookCallResource {
  return {
    type: 'webhook_call' as const,
    id: call.id,
    attributes: {
      entity_type: call.entityType,
      event_type: call.eventType,
      created_at: call.createdAt.toISOString(),
      request_url: call.requestUrl,
      request_headers: call.requestHeaders,
      request_payload: call.requestPayload,
      response_status: call.responseStatus,
      response_headers: call.responseHeaders,
      response_payload: call.responsePayload,
      attempted_auto_retries_count: call.attemptedAutoRetriesCount,
      last_sent_at: iso(call.lastSentAt),
      next_retry_at: iso(call.nextRetryAt),
      status: call.status,
      failure_reason: call.failureReason,
      // The producer's event id: the console offers recent ones to POST /webhooks/preview.
      event_id: call.eventId,
      // Flow control: every event the call carries (coalesced, batched), in the order they reached it.
      event_ids: call.eventIds,
    },
    relationships: { webhook: { data: { type: 'webhook' as const, id: call.webhookId } } },
  };
}
