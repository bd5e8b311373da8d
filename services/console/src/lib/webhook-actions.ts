import type { ApiClient } from './api.js';
import type { ReplayOffer, Webhook } from './types.js';

/**
 * Enables or disables a webhook (PUT /webhooks/:id). Enabling a disabled one answers, beside the
 * webhook, `meta.replay_offer`: the replay of what it missed, for the console to offer.
 */
export async function setWebhookEnabled(
  client: ApiClient,
  webhook: Webhook,
  enabled: boolean,
): Promise<{ webhook: Webhook; offer: ReplayOffer | null }> {
  const answer = await client.put<{ data: Webhook; meta?: { replay_offer?: ReplayOffer } }>(
    `/webhooks/${encodeURIComponent(webhook.id)}`,
    { data: { type: 'webhook', id: webhook.id, attributes: { enabled } } },
  );
  return { webhook: answer.data, offer: answer.meta?.replay_offer ?? null };
}
