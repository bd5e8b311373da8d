import type { Queryable, StoredEvent, WebhookRecord } from '@herald/store';
import { buildDefaultPayload, serializeEntity, type ModelSource } from './payload.js';
import { redactHeaders } from './redact-headers.js';
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
> & { nestedItemsInPayload: boolean };

export interface DeliveryRequestInput {
  webhook: RenderedWebhook;
  event: StoredEvent;
  callId: string;
  siteId: string;
  userAgent: string;
  attemptedAutoRetriesCount: number;
  /** The `webhook-signature` value for (call id, unix seconds, body). */
  sign: (callId: string, timestampSeconds: number, body: string) => string;
  now: Date;
  /** Where models are read (default: one query per entity). */
  models?: ModelSource;
}

export interface DeliveryRequest {
  url: string;
  body: string;
  /** Headers as sent. */
  headers: Record<string, string>;
  /**
   * Headers as the call log stores them (docs/api.md, The webhook call resource): credentials and
   * the webhook's `redact_headers` replaced by `***` (redact-headers.ts).
   */
  redacted: Record<string, string>;
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
  const { webhook, event } = input;
  const [entity, previousEntity] = await Promise.all([
    serializeEntity(
      db,
      event.environment,
      event.entity,
      webhook.nestedItemsInPayload,
      input.models,
    ),
    event.previousEntity === null || event.previousEntity === undefined
      ? null
      : serializeEntity(
          db,
          event.environment,
          event.previousEntity,
          webhook.nestedItemsInPayload,
          input.models,
        ),
  ]);
  const payload = buildDefaultPayload({
    callId: input.callId,
    webhookId: webhook.id,
    siteId: input.siteId,
    attemptedAutoRetriesCount: input.attemptedAutoRetriesCount,
    event,
    entity,
    previousEntity,
  });
  const url = renderUrl(webhook.url, payload);
  const body =
    webhook.customPayload === null
      ? JSON.stringify(payload)
      : renderCustomPayload(webhook.customPayload, payload);
  const { headers, redacted } = buildHeaders(input, body);
  return { url, body, headers, redacted };
}

/**
 * Headers as sent, and as logged (docs/api.md, What a webhook call sends;
 * The webhook call resource).
 */
function buildHeaders(
  input: DeliveryRequestInput,
  body: string,
): { headers: Record<string, string>; redacted: Record<string, string> } {
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
  const timestamp = Math.floor(now.getTime() / 1000);
  const sent = {
    ...headers,
    'webhook-id': callId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': input.sign(callId, timestamp, body),
  };
  return { headers: sent, redacted: redactHeaders(sent, webhook.redactHeaders) };
}
