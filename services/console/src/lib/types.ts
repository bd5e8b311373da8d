/** The wire resources the console reads (API.md §3.1, §4.1, §4.4), as plain types. */

export interface WebhookFilter {
  entity_type: string;
  entity_ids: string[];
}

export interface WebhookEventEntry {
  entity_type: string;
  event_types: string[];
  filter?: WebhookFilter | null;
  filters?: WebhookFilter[] | null;
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
  signing_secret?: string;
  disabled_reason?: string | null;
  created_at?: string;
  updated_at?: string;
}

export interface Webhook {
  type: 'webhook';
  id: string;
  attributes: WebhookAttributes;
}

export type CallStatus = 'pending' | 'success' | 'failed' | 'rescheduled';

export interface WebhookCall {
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
    status: CallStatus;
    /** Extensions a server may add (the event's id, why a call failed). */
    [extension: string]: unknown;
  };
  relationships?: { webhook?: { data?: { type: 'webhook'; id: string } | null } };
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
