import { z } from 'zod';

/** BullMQ job name on the `webhook-deliver` queue. */
export const DELIVER_WEBHOOK_JOB = 'deliver-webhook';

/**
 * A deliver job carries ids only (never payloads or secrets). `retry` is the auto retry it carries
 * out (1–7; absent for the first attempt); `resend` marks a manual resend (docs/api.md,
 * Webhook calls).
 */
export const DeliverJobData = z.object({
  callId: z.string().regex(/^[1-9]\d{0,17}$/),
  /** The call's webhook: lets the in-flight limit be checked before anything is loaded. */
  webhookId: z.string().regex(/^[1-9]\d{0,17}$/),
  retry: z.number().int().min(1).optional(),
  resend: z.boolean().optional(),
  /** The call has its turn in its webhook's rate limit queue (it waited for it). */
  rateSlot: z.boolean().optional(),
});
export type DeliverJobData = z.infer<typeof DeliverJobData>;

/**
 * Job id of a call's attempt: one per (call, retry), so the sweeper re-adding a call whose job still
 * exists is a no-op. BullMQ refuses integer-looking custom ids, hence the `call-` prefix.
 */
export function deliverJobId(callId: string, retry?: number): string {
  return retry ? `call-${callId}-r${retry}` : `call-${callId}`;
}

/** Job id of a manual resend: a fresh one each time, so a resend is never mistaken for a repeat. */
export function resendJobId(callId: string): string {
  return `call-${callId}-resend-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}
