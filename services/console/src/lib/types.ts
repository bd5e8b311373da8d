import type {
  DeliveryPolicy,
  Destination,
  WebhookAuth,
  WebhookBatch,
  WebhookTls,
} from '@herald/contract/tables';

/**
 * The wire resources the console reads (docs/api.md: the item resource of GET /items, The webhook
 * resource), as plain types; webhook calls (The webhook call resource) are the contract's
 * WebhookCallResource.
 */

interface WebhookFilter {
  entity_type: string;
  entity_ids: string[];
}

export interface WebhookEventEntry {
  entity_type: string;
  event_types: string[];
  filter?: WebhookFilter | null;
  filters?: WebhookFilter[] | null;
  /** Extensions, item entries (field-aware matching): absent, null or empty, a key does not narrow. */
  changed_fields?: string[] | null;
  locales?: string[] | null;
  record_status?: string[] | null;
  /** Conditions on the record's fields: api_key → operator → operand. */
  fields?: Record<string, Record<string, unknown>> | null;
}

export interface WebhookAttributes {
  name: string;
  url: string;
  enabled: boolean;
  headers: Record<string, string>;
  events: WebhookEventEntry[];
  http_basic_user: string | null;
  http_basic_password: string | null;
  custom_payload: string | null;
  payload_api_version: string;
  nested_items_in_payload: boolean;
  auto_retry: boolean;
  /** Extension: header names whose values the call log shows as `***`. */
  redact_headers?: string[];
  /** Extension: the endpoint health policy (rate limit, circuit breaker, disable after failing). */
  delivery_policy?: DeliveryPolicy;
  /** Extension: the default payload carries `changes`, a JSON Patch from the previous version. */
  payload_changes?: boolean;
  /** Extensions, flow control: calls of one entity in order, coalesced, batched. */
  delivery_order?: string;
  coalesce?: boolean;
  batch?: WebhookBatch | null;
  /** Extension: where the calls go (credentials shown as `***`). */
  destination?: Destination;
  /** Extensions, endpoint authentication: the write-only secrets are never answered. */
  auth?: Omit<WebhookAuth, 'client_secret'> | null;
  tls?: Omit<WebhookTls, 'client_key'> | null;
  signing_secret?: string;
  disabled_reason?: string | null;
  disabled_at?: string | null;
  created_at?: string;
  updated_at?: string;
}

export interface Webhook {
  type: 'webhook';
  id: string;
  attributes: WebhookAttributes;
}

export interface Item {
  type: 'item';
  id: string;
  attributes: Record<string, unknown>;
  relationships?: {
    item_type?: { data?: { type: 'item_type'; id: string } | null };
    [name: string]: unknown;
  };
  meta?: {
    created_at?: string;
    updated_at?: string;
    published_at?: string | null;
    status?: string;
    is_valid?: boolean;
    current_version?: string;
    [key: string]: unknown;
  };
}

export interface WebhookPreview {
  type: 'webhook_preview';
  id?: string;
  attributes: {
    url: string;
    headers: Record<string, string>;
    body: string;
    [extension: string]: unknown;
  };
}

/** A bulk resend or replay (docs/api.md, The bulk job resource). */
export interface BulkJob {
  type: 'bulk_job';
  id: string;
  attributes: {
    kind: 'bulk_resend' | 'replay';
    state: 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';
    filter: Record<string, unknown>;
    rate_per_second: number | null;
    /** null while the job is selecting. */
    matched: number | null;
    done: number;
    succeeded: number;
    failed: number;
    skipped: number;
    /** done / matched, 0–1; null while selecting. */
    progress: number | null;
    /** Items finished per second over about the last minute. */
    rate: number | null;
    failure_reason: string | null;
    created_at: string;
    started_at: string | null;
    finished_at: string | null;
    updated_at: string;
  };
  relationships: { webhook: { data: { type: 'webhook'; id: string } | null } };
}

/** What PUT /webhooks/:id answers beside `data` when it re-enables a disabled webhook. */
export interface ReplayOffer {
  kind: 'replay';
  webhook_id: string;
  filter: { occurred_at: { gt: string; lt?: string } };
}

/** An API token (docs/api.md, The access token resource); its value only when just made. */
export interface AccessToken {
  type: 'access_token';
  id: string;
  attributes: {
    name: string;
    /** The value: in the answers of creation and regeneration only. */
    token: string | null;
    /** `bootstrap` for the admin token of the configuration. */
    hardcoded_type: string | null;
    token_hint: string;
    last_used_at: string | null;
    created_at: string;
    updated_at: string;
  };
  relationships: { role: { data: { type: 'role'; id: string } } };
}

/** A built-in role (docs/api.md, GET /roles). */
export interface RoleResource {
  type: 'role';
  id: string;
  attributes: { name: string; description: string };
}
