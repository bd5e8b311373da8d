/**
 * BullMQ queue names. They are persisted in Redis keys: renaming one strands the jobs already
 * waiting under the old name, so change them only with a migration plan.
 */
export const QUEUE_EVENT_MATCH = 'event-match';
export const QUEUE_WEBHOOK_DELIVER = 'webhook-deliver';

/**
 * Redis pub/sub channel on which webhook changes are announced to the match workers. Always used
 * under the deployment's REDIS_PREFIX: see webhooksChangedChannel(redisPrefix).
 */
export const CHANNEL_WEBHOOKS_CHANGED = 'webhooks-changed';
