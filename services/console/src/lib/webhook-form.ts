import { CONTENT_ENTRY_KEYS } from '@herald/contract/tables';
import { policyForm, policyFromForm, type PolicyForm } from './delivery-policy.js';
import {
  authAttributes,
  authForm,
  destinationAttributes,
  destinationForm,
  tlsAttributes,
  tlsForm,
  type AuthForm,
  type DestinationForm,
  type TlsForm,
} from './destination.js';
import { flowAttributes, flowForm, type FlowForm } from './flow-control.js';
import { operandFromText, operandText, type ConditionRow } from './field-conditions.js';
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

/** One of an item entry's `fields` conditions. */
export interface EntryCondition extends ConditionRow {
  /** The operand the webhook holds: sent back as it is while the operator and text are unchanged. */
  stored?: { operator: string; value: string; operand: unknown };
}

export interface EventRow {
  key: number;
  entity_type: string;
  event_types: string[];
  filters: FilterRow[];
  /** The narrowing shape the webhook was sent in: the seed's `filter` or DatoCMS's `filters`. */
  shape: 'filter' | 'filters';
  /*
   * Field-aware matching (item entries; docs/api.md, Events and filters): `changed_fields` and
   * `locales` as typed, comma-separated; `record_status`; `fields` as condition rows.
   */
  changedFields: string;
  locales: string;
  recordStatus: string[];
  conditions: EntryCondition[];
  /** The content keys the entry was loaded with: emptied, they are sent as null, else left out. */
  loadedContentKeys: readonly string[];
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
  /** `payload_changes`: the default payload carries `changes` (a JSON Patch). */
  payloadChanges: boolean;
  autoRetry: boolean;
  /** `delivery_policy` as typed, each key empty for the deployment's default. */
  deliveryPolicy: PolicyForm;
  /** `delivery_order`, `coalesce` and `batch`. */
  flow: FlowForm;
  /** Where the calls go: HTTP to `url`, or a broker. */
  destination: DestinationForm;
  /** Endpoint authentication (HTTP): OAuth2 client credentials, mutual TLS. */
  auth: AuthForm;
  tls: TlsForm;
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

/** A new events entry, narrowed by nothing. */
export function newEventRow(entityType: string, eventTypes: string[]): EventRow {
  return {
    key: rowKey(),
    entity_type: entityType,
    event_types: eventTypes,
    filters: [],
    shape: 'filters',
    ...noContentKeys(),
    loadedContentKeys: [],
  };
}

/** An events entry's content keys, cleared (entries of other entity types take none). */
export function noContentKeys(): Pick<
  EventRow,
  'changedFields' | 'locales' | 'recordStatus' | 'conditions'
> {
  return { changedFields: '', locales: '', recordStatus: [], conditions: [] };
}

export function emptyForm(): WebhookForm {
  return {
    name: '',
    url: 'https://',
    enabled: true,
    headers: [],
    redactHeaders: '',
    events: [newEventRow('item', ['publish', 'unpublish'])],
    useCustomPayload: false,
    customPayload: SAMPLE_TEMPLATE,
    httpBasicUser: '',
    httpBasicPassword: '',
    nestedItemsInPayload: false,
    payloadChanges: false,
    autoRetry: true,
    deliveryPolicy: policyForm(undefined),
    flow: flowForm(undefined),
    destination: destinationForm(undefined),
    auth: authForm(null),
    tls: tlsForm(null),
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
        changedFields: (entry.changed_fields ?? []).join(', '),
        locales: (entry.locales ?? []).join(', '),
        recordStatus: [...(entry.record_status ?? [])],
        conditions: Object.entries(entry.fields ?? {}).flatMap(([field, operators]) =>
          Object.entries(operators).map(([operator, operand]) => {
            const value = operandText(operator, operand);
            return { key: rowKey(), field, operator, value, stored: { operator, value, operand } };
          }),
        ),
        loadedContentKeys: CONTENT_ENTRY_KEYS.filter((key) => Object.hasOwn(entry, key)),
      };
    }),
    useCustomPayload: attributes.custom_payload !== null,
    customPayload: attributes.custom_payload ?? SAMPLE_TEMPLATE,
    httpBasicUser: attributes.http_basic_user ?? '',
    httpBasicPassword: attributes.http_basic_password ?? '',
    nestedItemsInPayload: attributes.nested_items_in_payload,
    payloadChanges: attributes.payload_changes ?? false,
    autoRetry: attributes.auto_retry,
    deliveryPolicy: policyForm(attributes.delivery_policy),
    flow: flowForm(attributes),
    destination: destinationForm(attributes.destination),
    auth: authForm(attributes.auth),
    tls: tlsForm(attributes.tls),
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
  // Content keys: an empty one is left out, or null if the entry had it (the API refuses `[]`).
  const orNull = <T>(key: string, value: T | null) =>
    value !== null || row.loadedContentKeys.includes(key) ? { [key]: value } : {};
  const names = (text: string) => {
    const list = splitIds(text);
    return list.length > 0 ? list : null;
  };
  const fields = fieldsFromConditions(row.conditions);
  return {
    ...entry,
    ...orNull('changed_fields', names(row.changedFields)),
    ...orNull('locales', names(row.locales)),
    ...orNull('record_status', row.recordStatus.length > 0 ? row.recordStatus : null),
    ...orNull('fields', fields),
  };
}

/** An entry's `fields` from its condition rows (null for none); untouched rows as stored. */
function fieldsFromConditions(
  rows: readonly EntryCondition[],
): Record<string, Record<string, unknown>> | null {
  const fields = new Map<string, Map<string, unknown>>();
  for (const row of rows) {
    // A new row left blank is not a condition yet.
    if (row.field.trim() === '' && row.value.trim() === '') continue;
    const { stored } = row;
    const operand =
      stored && stored.operator === row.operator && stored.value === row.value
        ? stored.operand
        : operandFromText(row.operator, row.value);
    const field = row.field.trim();
    if (!fields.has(field)) fields.set(field, new Map());
    fields.get(field)!.set(row.operator, operand);
  }
  if (fields.size === 0) return null;
  // fromEntries defines own keys, whatever they are named (`__proto__` included).
  return Object.fromEntries([...fields].map(([field, ops]) => [field, Object.fromEntries(ops)]));
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
    payload_changes: form.payloadChanges,
    auto_retry: form.autoRetry,
    delivery_policy: policyFromForm(form.deliveryPolicy),
    ...flowAttributes(form.flow),
    ...endpointAttributes(form),
  };
}

/** Where the calls go and how they authenticate: the same in a save and in a preview. */
function endpointAttributes(form: WebhookForm) {
  return {
    destination: destinationAttributes(form.destination),
    auth: authAttributes(form.auth),
    tls: tlsAttributes(form.tls),
  };
}

/**
 * The attributes of a `webhook_preview` request (docs/api.md, POST /webhooks/preview): what shapes
 * the request sent, for one event (`eventId`, empty for the sample) or, with flow control, the
 * events one call carries (`eventIds`, when there are any).
 */
export function previewAttributes(
  form: WebhookForm,
  eventId: string,
  webhookId?: string,
  eventIds: readonly string[] = [],
): Record<string, unknown> {
  const attributes: Record<string, unknown> = {
    url: form.url.trim(),
    custom_payload: form.useCustomPayload ? form.customPayload : null,
    headers: headersFromRows(form.headers),
    redact_headers: splitIds(form.redactHeaders),
    http_basic_user: form.httpBasicUser === '' ? null : form.httpBasicUser,
    nested_items_in_payload: form.nestedItemsInPayload,
    payload_changes: form.payloadChanges,
    ...flowAttributes(form.flow),
    ...endpointAttributes(form),
  };
  // An existing webhook's id goes in the payload's webhook_id, as delivery would put it.
  if (webhookId) attributes['webhook_id'] = webhookId;
  if (eventIds.length > 0) attributes['event_ids'] = [...eventIds];
  else if (eventId.trim() !== '') attributes['event_id'] = eventId.trim();
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
