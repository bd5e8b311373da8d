import type { WebhookCallStatus } from '@herald/store';
import type { SendResult } from './http-client.js';
import { parseRetryAfter, retryDelayMs, type RetryPolicy } from './schedule.js';

/** What an attempt knew of its call when it sent it. */
export interface AttemptedCall {
  /** The call's stored status before the attempt (a resend's call may be in any). */
  status: WebhookCallStatus;
  /** The retry planned before the attempt (a failed resend keeps it). */
  nextRetryAt: Date | null;
  /** Auto retries made before this attempt (the job's `retry`, or the call's count). */
  retriesCount: number;
  /** A manual resend (POST /webhook_calls/:id/resend_webhook). */
  resend: boolean;
  /** The webhook's auto_retry. */
  autoRetry: boolean;
}

export interface OutcomeSettings {
  retry: RetryPolicy;
  /** When the answer came (epoch ms): the next retry and a Retry-After date count from it. */
  now: number;
  /** The retry delay's jitter (Math.random). */
  random: () => number;
}

/**
 * What one attempt led to: each case with the call status it stores (and the retry time and
 * failure reason stored with it). Attempts (attempt.ts) carries it out.
 */
export type Outcome =
  /** success: a 2xx. The call is done; a retry still planned (a resend's call) is dropped. */
  | { kind: 'succeeded'; status: 'success'; nextRetryAt: null; failureReason: null }
  /** failed: 410 Gone, not retried; the webhook is disabled once this outcome is stored. */
  | { kind: 'gone'; status: 'failed'; nextRetryAt: null; failureReason: string }
  /**
   * failed: the SSRF guard refused the address. A configuration error, not a transient one, so
   * not retried (a resend once SSRF_ALLOW_CIDRS or the URL changed still goes out).
   */
  | { kind: 'refused'; status: 'failed'; nextRetryAt: null; failureReason: string }
  /** A manual resend failed: the automatic plan stays as it was (rescheduled, or failed). */
  | {
      kind: 'resend-failed';
      status: 'rescheduled' | 'failed';
      nextRetryAt: Date | null;
      failureReason: string;
    }
  /** rescheduled: auto retry number `retry` is due in `delayMs`, at nextRetryAt. */
  | {
      kind: 'retry';
      status: 'rescheduled';
      retry: number;
      delayMs: number;
      nextRetryAt: Date;
      failureReason: string;
    }
  /** failed: the webhook does not retry automatically (auto_retry off). */
  | { kind: 'not-retried'; status: 'failed'; nextRetryAt: null; failureReason: string }
  /** failed: the retry schedule is used up. */
  | { kind: 'retries-exhausted'; status: 'failed'; nextRetryAt: null; failureReason: string };

/** The status class label of an attempt (bounded: 2xx…5xx or the error kind). */
export function statusClass(result: SendResult): string {
  return result.kind === 'response' ? `${Math.floor(result.status / 100)}xx` : result.error;
}

/**
 * Whether a result says the endpoint is away, and counts toward opening its circuit: no answer
 * (a timeout, a reset, a refused connection, a name that does not resolve), a 5xx or a 429. A
 * success, another answer (the endpoint is there, it refused this one), an SSRF refusal (the
 * URL's fault, not the endpoint's), a refused TLS handshake and an OAuth2 token not had (the
 * credentials' or the token endpoint's fault: the endpoint was not asked) do not.
 */
export function tripsCircuit(result: SendResult): boolean {
  if (result.kind === 'response') return result.status >= 500 || result.status === 429;
  return result.error !== 'blocked' && result.error !== 'tls' && result.error !== 'auth';
}

/**
 * What an attempt's result means for its call. Pure: the clock and the jitter come in settings.
 * Only a 2xx succeeds; a 410 or an SSRF refusal fails for good, even on a resend; a failed resend
 * leaves the plan as it was; any other failure is retried on the schedule when the webhook auto
 * retries, a 429 or 503's Retry-After pushing the retry later (never earlier).
 */
export function decideOutcome(
  result: SendResult,
  call: AttemptedCall,
  settings: OutcomeSettings,
): Outcome {
  if (result.kind === 'response' && result.status >= 200 && result.status < 300) {
    return { kind: 'succeeded', status: 'success', nextRetryAt: null, failureReason: null };
  }
  if (result.kind === 'error' && result.error === 'blocked') {
    const failureReason = `${result.reason} (refused by the SSRF guard; not retried)`;
    return { kind: 'refused', status: 'failed', nextRetryAt: null, failureReason };
  }
  const failureReason =
    result.kind === 'error'
      ? result.reason
      : result.status >= 300 && result.status < 400
        ? `HTTP ${result.status} (redirects are not followed)`
        : `HTTP ${result.status}`;
  if (result.kind === 'response' && result.status === 410) {
    return { kind: 'gone', status: 'failed', nextRetryAt: null, failureReason };
  }
  if (call.resend) {
    const status = call.status === 'rescheduled' ? 'rescheduled' : 'failed';
    return { kind: 'resend-failed', status, nextRetryAt: call.nextRetryAt, failureReason };
  }
  if (!call.autoRetry) {
    return { kind: 'not-retried', status: 'failed', nextRetryAt: null, failureReason };
  }
  const retryAfter =
    result.kind === 'response' && (result.status === 429 || result.status === 503)
      ? parseRetryAfter(result.headers['retry-after'], settings.now)
      : null;
  const retry = call.retriesCount + 1;
  const delayMs = retryDelayMs(settings.retry, retry, retryAfter, settings.random);
  if (delayMs === null) {
    return { kind: 'retries-exhausted', status: 'failed', nextRetryAt: null, failureReason };
  }
  const nextRetryAt = new Date(settings.now + delayMs);
  return { kind: 'retry', status: 'rescheduled', retry, delayMs, nextRetryAt, failureReason };
}
