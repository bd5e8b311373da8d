import { webhooksChangedChannel, type WebhookChangedMessage, errorMessage } from '@herald/contract';
import type { Coordination, Logger } from '@herald/runtime';

/**
 * Announces a committed webhook change so the match workers refresh their index within a second.
 * Postgres already holds the change and the workers also reload periodically, so a failed
 * announcement (Redis away) is logged, not turned into a failed request.
 */
export async function publishWebhookChange(
  deps: { coordination: Coordination; logger: Logger },
  message: WebhookChangedMessage,
): Promise<void> {
  try {
    const { coordination } = deps;
    await coordination.publish(
      webhooksChangedChannel(coordination.prefix),
      JSON.stringify(message),
    );
  } catch (error) {
    deps.logger.warn(
      { err: errorMessage(error), webhookId: message.id },
      'could not publish a webhook change; match workers will pick it up on their next reload',
    );
  }
}
