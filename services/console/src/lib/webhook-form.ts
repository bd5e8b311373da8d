import { policyForm, policyFromForm, type PolicyForm } from './delivery-policy.js';
import type { WebhookAttributes, WebhookEventEntry } from './types.js';

/**
 * The webhook form's state, and how it becomes a webhook's attributes (docs/api.md, The webhook
 * resource; and the preview request's). Kept free of the DOM so it is unit-tested.
 */
export interface HeaderRow {
  key: number;
  name: string;
  value: string;
}

export interface FilterRow {
  key: number;
  entity_type: string;
  /** Comma- or newline-separated ids, as typed. */
  ids: string;
}

export interface EventRow {
  key: number;
  entity_type: string;
  event_types: string[];
  filters: FilterRow[];
  /** The narrowing shape the webhook was sent in: the seed's `filter` or DatoCMS's `filters`. */
  shape: 'filter' | 'filters';
}

export interface WebhookForm {
  name: string;
  url: string;
  enabled: boolean;
  headers: HeaderRow[];
  /** Names of headers the call log hides (`redact_headers`), comma- or newline-separated. */
  redactHeaders: string;
  events: EventRow[];
  useCustomPayload: boolean;
  customPayload: string;
  httpBasicUser: string;
  httpBasicPassword: string;
  nestedItemsInPayload: boolean;
  autoRetry: boolean;
  /** `delivery_policy` as typed, each key empty for the deployment's default. */
  deliveryPolicy: PolicyForm;
}

let nextKey = 1;
/** A key for list rows, so that Preact keeps inputs attached to the right row. */
export const rowKey = (): number => nextKey++;

const SAMPLE_TEMPLATE = `{
  "id": "{{webhook_call_id}}",
  "event": "{{entity_type}}.{{event_type}}",
  "environment": "{{environment}}",
  "record": "{{entity.id}}"
}`;

export function emptyForm(): WebhookForm {
  return {
    name: '',
    url: 'https://',
    enabled: true,
    headers: [],
    redactHeaders: '',
    events: [
      {
        key: rowKey(),
        entity_type: 'item',
        event_types: ['publish', 'unpublish'],
        filters: [],
        shape: 'filters',
      },
    ],
    useCustomPayload: false,
    customPayload: SAMPLE_TEMPLATE,
    httpBasicUser: '',
    httpBasicPassword: '',
    nestedItemsInPayload: false,
    autoRetry: true,
    deliveryPolicy: policyForm(undefined),
  };
}

export function formFromWebhook(attributes: WebhookAttributes): WebhookForm {
  return {
    name: attributes.name,
    url: attributes.url,
    enabled: attributes.enabled,
    headers: Object.entries(attributes.headers ?? {}).map(([name, value]) => ({
      key: rowKey(),
      name,
      value,
    })),
    redactHeaders: (attributes.redact_headers ?? []).join(', '),
    events: (attributes.events ?? []).map((entry) => {
      const filters = entry.filters ?? (entry.filter ? [entry.filter] : []);
      return {
        key: rowKey(),
        entity_type: entry.entity_type,
        event_types: [...entry.event_types],
        filters: filters.map((filter) => ({
          key: rowKey(),
          entity_type: filter.entity_type,
          ids: filter.entity_ids.join(', '),
        })),
        shape:
          Object.hasOwn(entry, 'filter') && !Object.hasOwn(entry, 'filters') ? 'filter' : 'filters',
      };
    }),
    useCustomPayload: attributes.custom_payload !== null,
    customPayload: attributes.custom_payload ?? SAMPLE_TEMPLATE,
    httpBasicUser: attributes.http_basic_user ?? '',
    httpBasicPassword: attributes.http_basic_password ?? '',
    nestedItemsInPayload: attributes.nested_items_in_payload,
    autoRetry: attributes.auto_retry,
    deliveryPolicy: policyForm(attributes.delivery_policy),
  };
}

function splitIds(ids: string): string[] {
  return ids
    .split(/[,\n]/)
    .map((id) => id.trim())
    .filter((id) => id !== '');
}

function headersFromRows(rows: readonly HeaderRow[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const row of rows) if (row.name.trim() !== '') headers[row.name.trim()] = row.value;
  return headers;
}

function eventEntry(row: EventRow): WebhookEventEntry {
  const entry: WebhookEventEntry = { entity_type: row.entity_type, event_types: row.event_types };
  const filters = row.filters.map((filter) => ({
    entity_type: filter.entity_type,
    entity_ids: splitIds(filter.ids),
  }));
  if (row.shape === 'filter' && filters.length === 1) entry.filter = filters[0]!;
  else if (filters.length > 0) entry.filters = filters;
  return entry;
}

/** The attributes a create or update sends (all writable keys: create needs them all). */
export function attributesFromForm(form: WebhookForm): Record<string, unknown> {
  return {
    name: form.name,
    url: form.url.trim(),
    enabled: form.enabled,
    headers: headersFromRows(form.headers),
    redact_headers: splitIds(form.redactHeaders),
    events: form.events.map(eventEntry),
    custom_payload: form.useCustomPayload ? form.customPayload : null,
    http_basic_user: form.httpBasicUser === '' ? null : form.httpBasicUser,
    http_basic_password: form.httpBasicPassword === '' ? null : form.httpBasicPassword,
    nested_items_in_payload: form.nestedItemsInPayload,
    auto_retry: form.autoRetry,
    delivery_policy: policyFromForm(form.deliveryPolicy),
  };
}

/**
 * The attributes of a `webhook_preview` request (docs/api.md, POST /webhooks/preview): what shapes
 * the request sent.
 */
export function previewAttributes(
  form: WebhookForm,
  eventId: string,
  webhookId?: string,
): Record<string, unknown> {
  const attributes: Record<string, unknown> = {
    url: form.url.trim(),
    custom_payload: form.useCustomPayload ? form.customPayload : null,
    headers: headersFromRows(form.headers),
    redact_headers: splitIds(form.redactHeaders),
    http_basic_user: form.httpBasicUser === '' ? null : form.httpBasicUser,
    nested_items_in_payload: form.nestedItemsInPayload,
  };
  // An existing webhook's id goes in the payload's webhook_id, as delivery would put it.
  if (webhookId) attributes['webhook_id'] = webhookId;
  if (eventId.trim() !== '') attributes['event_id'] = eventId.trim();
  return attributes;
}

/**
 * Where a server field path lands in the form: header errors are keyed by the header's name
 * (`headers.X-Foo`), event errors by index (`events.1.filters.0.entity_ids.2`). Errors on a
 * `filter` (single-object shape) belong to that entry's first filter row.
 */
export function normalizeFieldPath(field: string): string {
  return field.replace(/^(events\.\d+)\.filter(?=\.|$)/, '$1.filters.0');
}
