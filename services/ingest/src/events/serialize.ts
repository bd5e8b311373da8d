import type { EventCallResource, EventResource, LoggedEventResource } from '@herald/contract';
import type { EventCall, LoggedEvent, StoredEvent } from '@herald/store';

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/** An event of GET /events (docs/api.md, The event resource): without its entity bodies. */
export function serializeLoggedEvent(event: LoggedEvent): LoggedEventResource {
  return {
    type: 'event',
    id: event.id,
    attributes: {
      environment: event.environment,
      entity_type: event.entityType,
      event_type: event.eventType,
      entity_id: event.entityId,
      item_type_id: event.itemTypeId,
      item_type_api_key: event.itemTypeApiKey,
      occurred_at: event.occurredAt.toISOString(),
      accepted_at: event.acceptedAt.toISOString(),
      matched_at: iso(event.matchedAt),
    },
  };
}

/** The event of GET /events/:id: with the bodies as the producer sent them, and its calls. */
export function serializeStoredEvent(
  event: StoredEvent,
  calls: readonly EventCall[],
): EventResource {
  const listed = serializeLoggedEvent(event);
  return {
    ...listed,
    attributes: {
      ...listed.attributes,
      entity: event.entity,
      previous_entity: event.previousEntity ?? null,
      related_entities: event.relatedEntities,
    },
    relationships: {
      webhook_calls: { data: calls.map((call) => ({ type: 'webhook_call', id: call.id })) },
    },
  };
}

/** A call in the `included` of GET /events/:id (docs/api.md, GET /events/:id). */
export function serializeEventCall(call: EventCall): EventCallResource {
  return {
    type: 'webhook_call',
    id: call.id,
    attributes: {
      status: call.status,
      created_at: call.createdAt.toISOString(),
      attempts_count: call.attemptsCount,
      attempted_auto_retries_count: call.attemptedAutoRetriesCount,
      last_sent_at: iso(call.lastSentAt),
      next_retry_at: iso(call.nextRetryAt),
      response_status: call.responseStatus,
      failure_reason: call.failureReason,
    },
    relationships: { webhook: { data: { type: 'webhook', id: call.webhookId } } },
  };
}
