import { createHmac } from 'node:crypto';

/** The HMAC key of a Standard Webhooks secret: the base64 after `whsec_`. */
function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

/**
 * The `webhook-signature` header of Standard Webhooks: `v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">` per active secret, space-separated (two during a rotation).
 */
export function signWebhook(
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): string {
  const content = `${messageId}.${timestampSeconds}.${body}`;
  return secrets
    .map(
      (secret) => `v1,${createHmac('sha256', secretKey(secret)).update(content).digest('base64')}`,
    )
    .join(' ');
}
