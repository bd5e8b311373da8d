import { z } from 'zod';

/** BullMQ job names on the `webhook-deliver` queue: one call (retries, resends, the sweeper)… */
export const DELIVER_WEBHOOK_JOB = 'deliver-webhook';
/** …or the first attempts of several new calls (the match worker), sent concurrently. */
export const DELIVER_CALLS_JOB = 'deliver-calls';

const CallId = z.string().regex(/^[1-9]\d{0,17}$/);

/**
 * A deliver job carries ids only (never payloads or secrets). `retry` is the auto retry it carries
 * out (1–7; absent for the first attempt); `resend` marks a manual resend (API.md §4.4).
 */
export const DeliverJobData = z.object({
  callId: CallId,
  /** The call's webhook: lets the in-flight limit be checked before anything is loaded. */
  webhookId: CallId,
  retry: z.number().int().min(1).optional(),
  resend: z.boolean().optional(),
});
export type DeliverJobData = z.infer<typeof DeliverJobData>;

/** Calls per `deliver-calls` job at most (the match worker splits larger sets). */
export const DELIVER_JOB_CALLS_MAX = 100;

/**
 * First attempts of new calls, several per job: BullMQ's per-job scripts (add, fetch, finish) are
 * then paid once per job instead of once per call. Ids only, as for DeliverJobData.
 */
export const DeliverCallsJobData = z.object({
  calls: z
    .array(z.object({ callId: CallId, webhookId: CallId }))
    .min(1)
    .max(DELIVER_JOB_CALLS_MAX),
});
export type DeliverCallsJobData = z.infer<typeof DeliverCallsJobData>;

/** Job id of a deliver-calls job: its first call and its size (re-adding the same set is a no-op). */
export function deliverCallsJobId(calls: readonly { callId: string }[]): string {
  return `calls-${calls[0]?.callId ?? 'none'}-${calls.length}`;
}

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
