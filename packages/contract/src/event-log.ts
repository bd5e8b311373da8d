import type { WebhookCallStatus } from './webhook-calls.js';

// The stored events as GET /events and GET /events/:id give them back: ingest serves these and
// the console reads them (exported by tables.ts too, so this module imports no package).

/**
 * A stored event (extension): GET /events lists them without the entity bodies, GET /events/:id
 * gives one with them and its webhook calls (docs/api.md, Events).
 */
export interface EventResource {
  type: 'event';
  /** The producer's id. */
  id: string;
  attributes: {
    environment: string;
    entity_type: string;
    event_type: string;
    entity_id: string | null;
    item_type_id: string | null;
    item_type_api_key: string | null;
    occurred_at: string;
    accepted_at: string;
    /** null: stored, not matched against the webhooks yet. */
    matched_at: string | null;
    /** GET /events/:id only, as the producer sent them. */
    entity?: unknown;
    previous_entity?: unknown;
    related_entities?: unknown[];
  };
  /** GET /events/:id only: the event's calls, in `included`. */
  relationships?: { webhook_calls: { data: { type: 'webhook_call'; id: string }[] } };
}

/**
 * A webhook call as GET /events/:id includes it: where it stands, without the request and answer
 * (GET /webhook_calls/:id has them).
 */
export interface EventCallResource {
  type: 'webhook_call';
  id: string;
  attributes: {
    status: WebhookCallStatus;
    created_at: string;
    attempts_count: number;
    attempted_auto_retries_count: number;
    last_sent_at: string | null;
    next_retry_at: string | null;
    response_status: number | null;
    failure_reason: string | null;
  };
  relationships: { webhook: { data: { type: 'webhook'; id: string } } };
}
