import { CHANNEL_WEBHOOKS_CHANGED } from './queues.js';

/**
 * Webhook wire vocabulary shared by ingest (validation), delivery (matching) and the console: the
 * entity/event type table and the filter kinds (docs/api.md, Events and filters), and the change
 * notifications published when a webhook changes.
 */

/** docs/api.md, Events and filters: each entity type and the event types it has. */
export const WEBHOOK_EVENT_TYPES = {
  item: ['create', 'update', 'delete', 'publish', 'unpublish'],
  item_type: ['create', 'update', 'delete'],
  upload: ['create', 'update', 'delete'],
  build_trigger: ['deploy_started', 'deploy_succeeded', 'deploy_failed'],
  environment: ['create', 'update', 'promote', 'delete'],
  maintenance_mode: ['change'],
  sso_user: ['create'],
  cda_cache_tags: ['invalidate'],
  /**
   * Extension: Herald's own notices (docs/api.md, Notices), which only Herald emits: a webhook
   * started failing, recovered, had its circuit opened or was disabled; a bulk job ended.
   */
  notice: ['failing', 'recovered', 'circuit_opened', 'disabled', 'bulk_job_finished'],
} as const satisfies Record<string, readonly string[]>;

export type WebhookEntityType = keyof typeof WEBHOOK_EVENT_TYPES;
export const WEBHOOK_ENTITY_TYPES = Object.keys(WEBHOOK_EVENT_TYPES) as WebhookEntityType[];

export function isWebhookEntityType(value: string): value is WebhookEntityType {
  return Object.hasOwn(WEBHOOK_EVENT_TYPES, value);
}

/** True when `eventType` is one of `entityType`'s event types (docs/api.md, Events and filters). */
export function isWebhookEventType(entityType: WebhookEntityType, eventType: string): boolean {
  return (WEBHOOK_EVENT_TYPES[entityType] as readonly string[]).includes(eventType);
}

/** Entity types whose webhook entries take no filters. */
export const UNFILTERED_ENTITY_TYPES: readonly WebhookEntityType[] = ['cda_cache_tags', 'notice'];

/** The narrowing kinds a filter may name (docs/api.md, Events and filters). */
export const WEBHOOK_FILTER_ENTITY_TYPES = [
  'item_type',
  'item',
  'build_trigger',
  'environment',
  'environment_type',
] as const;
export type WebhookFilterEntityType = (typeof WEBHOOK_FILTER_ENTITY_TYPES)[number];

/** The values an `environment_type` filter lists. */
export const ENVIRONMENT_TYPES = ['primary', 'sandbox'] as const;

export interface WebhookFilter {
  entity_type: WebhookFilterEntityType;
  entity_ids: string[];
}

/**
 * One entry of a webhook's `events`. The narrowing arrives in the seed's shape (`filter`, one
 * object) or DatoCMS's (`filters`, an array) and is stored and echoed in the shape it was sent.
 */
export interface WebhookEventEntry {
  entity_type: WebhookEntityType;
  event_types: string[];
  filter?: WebhookFilter | null;
  filters?: WebhookFilter[] | null;
  /*
   * Extensions, `item` entries only: field-aware matching (docs/api.md, Events and filters;
   * webhook-content.ts). Absent, null or empty, a key does not narrow.
   */
  /** At least one of these fields changed (in one of `locales`, when localized and given). */
  changed_fields?: string[] | null;
  /** Some field changed in one of these locales; also the locales `fields` look at. */
  locales?: string[] | null;
  /** The record's status after the event is one of these. */
  record_status?: RecordStatus[] | null;
  /** Conditions on the record's fields with GET /items' operators: api_key → operator → operand. */
  fields?: Record<string, Record<string, unknown>> | null;
}

/** The statuses a record has (docs/api.md, GET /items, `_status`). */
export const RECORD_STATUSES = ['draft', 'updated', 'published'] as const;
export type RecordStatus = (typeof RECORD_STATUSES)[number];

/** The keys of an events entry that narrow on content (extension; `item` entries only). */
export const CONTENT_ENTRY_KEYS = ['changed_fields', 'locales', 'record_status', 'fields'] as const;

/** The filters of an entry whatever shape it was sent in (all must hold; ids within one OR). */
export function entryFilters(entry: WebhookEventEntry): WebhookFilter[] {
  if (entry.filters) return entry.filters;
  return entry.filter ? [entry.filter] : [];
}

/** The only payload_api_version (docs/api.md, The webhook resource). */
export const PAYLOAD_API_VERSIONS = ['3'] as const;

/** How long a rotated-out signing secret keeps signing beside the new one. */
export const SIGNING_SECRET_ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

/** Redis pub/sub channel for webhook changes, under the deployment's REDIS_PREFIX. */
export function webhooksChangedChannel(redisPrefix: string): string {
  return `${redisPrefix}:${CHANNEL_WEBHOOKS_CHANGED}`;
}

/** The message published on webhooksChangedChannel: an id and what happened, never secrets. */
export interface WebhookChangedMessage {
  id: string;
  change: 'created' | 'updated' | 'deleted' | 'secret_rotated';
}

/**
 * A webhook's endpoint health policy (extension): each key absent or null takes the deployment's
 * default. `rate_limit_per_second`: requests per second across every delivery process (none by
 * default); `circuit_failures` (0: no circuit breaker), `circuit_cooldown_ms`,
 * `disable_after_failing_ms` (0: never disabled for failing).
 */
export interface DeliveryPolicy {
  rate_limit_per_second?: number | null;
  circuit_failures?: number | null;
  circuit_cooldown_ms?: number | null;
  disable_after_failing_ms?: number | null;
}

/**
 * Flow control (extension; docs/api.md, Flow control): `per_entity` delivers a webhook's calls of
 * one entity strictly in the producer's event order, one at a time; `any` (the default) lets
 * them go as they come.
 */
export const DELIVERY_ORDERS = ['any', 'per_entity'] as const;
export type DeliveryOrder = (typeof DELIVERY_ORDERS)[number];

/** A webhook's batching (extension): the events of `window_ms` go as one call of ≤ max_events. */
export interface WebhookBatch {
  window_ms: number;
  max_events: number;
}

/**
 * How a webhook authenticates to its endpoint (extension; docs/api.md, Endpoint authentication):
 * OAuth2 client credentials (RFC 6749 §4.4), the token sent as `Authorization: Bearer`. As
 * stored: `client_secret` is write-only, never in an answer, a log or the call log.
 */
export interface WebhookAuth {
  kind: 'oauth2_client_credentials';
  token_url: string;
  client_id: string;
  client_secret: string;
  /** How the client authenticates to the token endpoint (RFC 6749 §2.3.1): Basic, or the body. */
  client_auth: 'basic' | 'body';
  scope: string | null;
  audience: string | null;
}
export const WEBHOOK_AUTH_KINDS = ['oauth2_client_credentials'] as const;
export const OAUTH2_CLIENT_AUTHS = ['basic', 'body'] as const;

/**
 * Mutual TLS towards a webhook's endpoint (extension): a client certificate and its key, and the
 * CAs that sign the endpoint's certificate in place of the system's (PEM). `client_key` is
 * write-only. A webhook may give only `ca_certificate` (an endpoint with a private CA).
 */
export interface WebhookTls {
  client_certificate: string | null;
  client_key: string | null;
  ca_certificate: string | null;
}

/** The bounds of `batch` (docs/api.md, Flow control). */
export const BATCH_LIMITS = {
  window_ms: { min: 10, max: 600_000 },
  max_events: { min: 1, max: 1_000, default: 100 },
} as const;

/**
 * The entity types whose events carry a state of their entity, which a newer event replaces:
 * only these are coalesced. The others (deploys, cache tag invalidations, notices…) each say
 * something of their own and always get their own call (or batch entry).
 */
export const COALESCED_ENTITY_TYPES: readonly WebhookEntityType[] = [
  'item',
  'item_type',
  'upload',
  'environment',
  'maintenance_mode',
];
