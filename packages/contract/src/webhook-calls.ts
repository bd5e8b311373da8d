/**
 * docs/api.md, The webhook call resource: pending (not yet answered), success, failed, rescheduled
 * (retry planned).
 */
export const WEBHOOK_CALL_STATUSES = ['pending', 'success', 'failed', 'rescheduled'] as const;
export type WebhookCallStatus = (typeof WEBHOOK_CALL_STATUSES)[number];

/**
 * What made an attempt (extension): the call's first attempt (or its re-enqueue after Redis lost
 * it), an automatic retry, a resend through the API, and, for the recovery jobs and test sends,
 * a bulk resend, a replay or a test.
 */
export const ATTEMPT_TRIGGERS = [
  'first',
  'retry',
  'resend',
  'bulk_resend',
  'replay',
  'test',
] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

/** The id of the sample event that previews and test sends use when no stored event is named. */
export const SAMPLE_EVENT_ID = 'sample-event';
