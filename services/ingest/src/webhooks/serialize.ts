import {
  redactDestination,
  type IncludedWebhookResource,
  type WebhookAuth,
  type WebhookResource,
} from '@herald/contract';
import { redactHeaders, redactUrl } from '@herald/payload';
import type { WebhookRecord } from '@herald/store';

/**
 * The webhook resource (docs/api.md, The webhook resource); admins only see it, so the signing
 * secret is shown.
 */
export function serializeWebhook(webhook: WebhookRecord): WebhookResource {
  return {
    type: 'webhook' as const,
    id: webhook.id,
    attributes: {
      name: webhook.name,
      url: webhook.url,
      enabled: webhook.enabled,
      headers: webhook.headers,
      events: webhook.events,
      http_basic_user: webhook.httpBasicUser,
      http_basic_password: webhook.httpBasicPassword,
      custom_payload: webhook.customPayload,
      payload_api_version: webhook.payloadApiVersion,
      nested_items_in_payload: webhook.nestedItemsInPayload,
      auto_retry: webhook.autoRetry,
      redact_headers: webhook.redactHeaders,
      delivery_policy: webhook.deliveryPolicy,
      payload_changes: webhook.payloadChanges,
      // Flow control (extensions): always all three, `batch` null when the webhook has none.
      delivery_order: webhook.deliveryOrder,
      coalesce: webhook.coalesceEvents,
      batch: webhook.batch,
      trace_context: webhook.traceContext,
      // Write-only credentials: shown as `***`.
      destination: redactDestination(webhook.destination),
      auth: serializeAuth(webhook.auth),
      tls: webhook.tls && {
        client_certificate: webhook.tls.client_certificate,
        ca_certificate: webhook.tls.ca_certificate,
      },
      signing_secret: webhook.signingSecret,
      disabled_reason: webhook.disabledReason,
      disabled_at: webhook.disabledAt ? webhook.disabledAt.toISOString() : null,
      created_at: webhook.createdAt.toISOString(),
      updated_at: webhook.updatedAt.toISOString(),
    },
  };
}

/**
 * A webhook in the `included` of GET /webhook_calls (docs/api.md, GET /webhook_calls): shown
 * beside the call log, so with what the log hides hidden too. The URL and headers as a call logs
 * them, `http_basic_password` as `***` when there is one, no `signing_secret`; GET /webhooks/:id
 * shows them whole. Every attribute the official client types stays, so it reads these as webhooks.
 */
export function serializeIncludedWebhook(webhook: WebhookRecord): IncludedWebhookResource {
  const { attributes, ...resource } = serializeWebhook(webhook);
  const { signing_secret: _secret, ...shown } = attributes;
  return {
    ...resource,
    attributes: {
      ...shown,
      url: redactUrl(webhook.url),
      headers: redactHeaders(webhook.headers, webhook.redactHeaders),
      http_basic_password: webhook.httpBasicPassword === null ? null : '***',
    },
  };
}

/** `auth` as answered: the write-only `client_secret` left out. */
function serializeAuth(auth: WebhookAuth | null): WebhookResource['attributes']['auth'] {
  if (!auth) return null;
  const { client_secret: _secret, ...shown } = auth;
  return shown;
}
