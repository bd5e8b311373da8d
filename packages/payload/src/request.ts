import type { Queryable, StoredEvent, WebhookRecord } from '@herald/store';
import { describeChanges } from '@herald/contract';
import { jsonPatch, type JsonPatchOperation } from './changes.js';
import {
  buildDefaultPayload,
  serializeEntity,
  type DefaultPayload,
  type ModelSource,
} from './payload.js';
import { redactHeaders } from './redact-headers.js';
import { redactUrl } from './redact-url.js';
import { renderCustomPayload, renderUrl } from './render.js';

/** What shapes the request of one call: the webhook's settings that the rendering reads. */
export type RenderedWebhook = Pick<
  WebhookRecord,
  | 'id'
  | 'url'
  | 'headers'
  | 'customPayload'
  | 'httpBasicUser'
  | 'httpBasicPassword'
  | 'redactHeaders'
  | 'nestedItemsInPayload'
  | 'payloadChanges'
>;

export interface DeliveryRequestInput {
  webhook: RenderedWebhook;
  /** The event the call sends (for a coalesced call, its events merged: callContent). */
  event: StoredEvent;
  /**
   * A batch's entries (callContent), in order: the payload lists them all in `events`, and its
   * other keys are the last one's. Absent or null: not a batch.
   */
  entries?: readonly StoredEvent[] | null;
  callId: string;
  siteId: string;
  userAgent: string;
  attemptedAutoRetriesCount: number;
  /** The `webhook-signature` value for (call id, unix seconds, body). */
  sign: (callId: string, timestampSeconds: number, body: string) => string;
  now: Date;
  /** Where models are read (default: one query per entity). */
  models?: ModelSource;
  /**
   * The W3C traceparent of the attempt's span, sent as `traceparent` in place of any the
   * webhook's own headers set (docs/operations.md, Traces). Absent or null: none is added.
   */
  traceparent?: string | null;
}

export interface DeliveryRequest {
  /** The URL as sent. */
  url: string;
  body: string;
  /** Headers as sent. */
  headers: Record<string, string>;
  /**
   * The URL and headers as the call log stores them (docs/api.md, The webhook call resource):
   * credentials and the webhook's `redact_headers` replaced by `***` (redact-url.ts,
   * redact-headers.ts). Only this form is ever stored or shown.
   */
  logged: { url: string; headers: Record<string, string> };
}

/**
 * The request a call sends (docs/api.md, What a webhook call sends): rendered url, body and
 * headers. The deliver worker and POST /webhooks/preview both call this, so a preview is exactly
 * what delivery would send.
 */
export async function renderDeliveryRequest(
  db: Queryable,
  input: DeliveryRequestInput,
): Promise<DeliveryRequest> {
  const { webhook } = input;
  // The attributes `changes` and `changed_fields` compare, only when the webhook shows them.
  const wantsChangedFields = webhook.customPayload?.includes('changed_fields') ?? false;
  const render = (event: StoredEvent) => renderEvent(db, input, event, wantsChangedFields);
  const entries = input.entries ?? null;
  const rendered = await Promise.all((entries ?? [input.event]).map(render));
  const main = rendered[rendered.length - 1]!;
  const payload: DefaultPayload & { events?: BatchEntry[] } = buildDefaultPayload({
    callId: input.callId,
    webhookId: webhook.id,
    siteId: input.siteId,
    attemptedAutoRetriesCount: input.attemptedAutoRetriesCount,
    event: main.event,
    entity: main.entity,
    previousEntity: main.previousEntity,
    ...(webhook.payloadChanges && { changes: main.changes }),
  });
  const view: Record<string, unknown> = { ...payload, ...main.view };
  if (entries) {
    // Extension, batches: every entry in the producer's order, the last one also at the top.
    payload.events = rendered.map((entry) => batchEntry(entry, webhook.payloadChanges));
    view['events'] = rendered.map((entry) => ({
      ...batchEntry(entry, webhook.payloadChanges),
      ...entry.view,
    }));
  }
  const url = renderUrl(webhook.url, payload);
  const body =
    webhook.customPayload === null
      ? JSON.stringify(payload)
      : renderCustomPayload(webhook.customPayload, view);
  const headers = buildHeaders(input, body);
  return {
    url,
    body,
    headers,
    logged: { url: redactUrl(url), headers: redactHeaders(headers, webhook.redactHeaders) },
  };
}

/** One event of a call, serialized: its entities, its changes, what only templates see. */
interface RenderedEvent {
  event: StoredEvent;
  entity: unknown;
  previousEntity: unknown;
  /** Present only for webhooks with payload_changes (null when unknown). */
  changes: JsonPatchOperation[] | null;
  /** Extension for templates: the api_keys of the fields that changed (absent when unknown). */
  view: { changed_fields?: string[] };
}

async function renderEvent(
  db: Queryable,
  input: DeliveryRequestInput,
  event: StoredEvent,
  wantsChangedFields: boolean,
): Promise<RenderedEvent> {
  const { webhook } = input;
  const serialize = (entity: unknown, nested: boolean) =>
    serializeEntity(db, event.environment, entity, nested, input.models);
  const [entity, previousEntity] = await Promise.all([
    serialize(event.entity, webhook.nestedItemsInPayload),
    event.previousEntity === null || event.previousEntity === undefined
      ? null
      : serialize(event.previousEntity, webhook.nestedItemsInPayload),
  ]);
  const versions =
    webhook.payloadChanges || wantsChangedFields
      ? await comparedVersions(event, entity, previousEntity, (e) => serialize(e, false), webhook)
      : null;
  return {
    event,
    entity,
    previousEntity,
    changes: versions ? jsonPatch(versions.previous, versions.next) : null,
    view: versions ? { changed_fields: changedFields(versions.previous, versions.next) } : {},
  };
}

/** An entry of a batch's `events`: the keys of the default payload that describe its event. */
export type BatchEntry = Omit<
  DefaultPayload,
  'webhook_call_id' | 'attempted_auto_retries_count' | 'webhook_id' | 'site_id'
>;

function batchEntry(rendered: RenderedEvent, payloadChanges: boolean): BatchEntry {
  const full = buildDefaultPayload({
    callId: '',
    webhookId: '',
    siteId: '',
    attemptedAutoRetriesCount: 0,
    event: rendered.event,
    entity: rendered.entity,
    previousEntity: rendered.previousEntity,
    ...(payloadChanges && { changes: rendered.changes }),
  });
  const {
    webhook_call_id: _call,
    attempted_auto_retries_count: _retries,
    webhook_id: _webhook,
    site_id: _site,
    ...entry
  } = full;
  return entry;
}

const attributesOf = (entity: unknown): Record<string, unknown> => {
  const attributes = (entity as { attributes?: unknown } | null)?.attributes;
  return attributes !== null && typeof attributes === 'object' && !Array.isArray(attributes)
    ? (attributes as Record<string, unknown>)
    : {};
};

/**
 * The previous and new attributes a payload's `changes` and `changed_fields` compare, or null
 * when the previous version is unknown (an event with no previous_entity that is not an item
 * event, or one stored before Herald kept the previous version). Against the version Herald
 * stored (block fields as block ids), the entity is compared with its blocks as ids too.
 */
async function comparedVersions(
  event: StoredEvent,
  entity: unknown,
  previousEntity: unknown,
  collapsed: (entity: unknown) => Promise<unknown>,
  webhook: RenderedWebhook,
): Promise<{ previous: Record<string, unknown>; next: Record<string, unknown> } | null> {
  if (event.previousEntity !== null && event.previousEntity !== undefined) {
    return { previous: attributesOf(previousEntity), next: attributesOf(entity) };
  }
  const stored = event.previousAttributes;
  if (stored === null || stored === undefined) return null;
  const next = webhook.nestedItemsInPayload ? await collapsed(event.entity) : entity;
  return { previous: stored, next: attributesOf(next) };
}

/** The api_keys of the attributes that differ, in the order of the new version, then removed ones. */
function changedFields(previous: Record<string, unknown>, next: Record<string, unknown>): string[] {
  return [...describeChanges(previous, next, () => false).keys()].sort(
    (a, b) => keyRank(next, a) - keyRank(next, b),
  );
}

const keyRank = (attributes: Record<string, unknown>, key: string): number => {
  const index = Object.keys(attributes).indexOf(key);
  return index < 0 ? Number.MAX_SAFE_INTEGER : index;
};

/** Headers as sent (docs/api.md, What a webhook call sends). */
function buildHeaders(input: DeliveryRequestInput, body: string): Record<string, string> {
  const { webhook, callId, userAgent, now } = input;
  const headers: Record<string, string> = {};
  const custom = Object.keys(webhook.headers).map((h) => h.toLowerCase());
  if (!custom.includes('content-type')) headers['Content-Type'] = 'application/json';
  if (!custom.includes('user-agent')) headers['User-Agent'] = userAgent;
  Object.assign(headers, webhook.headers);
  if (webhook.httpBasicUser !== null) {
    for (const name of Object.keys(headers)) {
      if (name.toLowerCase() === 'authorization') delete headers[name];
    }
    const credentials = `${webhook.httpBasicUser}:${webhook.httpBasicPassword ?? ''}`;
    headers['Authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
  }
  if (input.traceparent) {
    // The trace context is the attempt's, not a fixed value the webhook may have set.
    for (const name of Object.keys(headers)) {
      const lower = name.toLowerCase();
      if (lower === 'traceparent' || lower === 'tracestate') delete headers[name];
    }
    headers['traceparent'] = input.traceparent;
  }
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    ...headers,
    'webhook-id': callId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': input.sign(callId, timestamp, body),
  };
}
