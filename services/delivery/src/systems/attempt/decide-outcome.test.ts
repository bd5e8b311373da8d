import { describe, expect, it } from 'vitest';
import {
  decideOutcome,
  statusClass,
  tripsCircuit,
  type AttemptedCall,
  type Outcome,
  type OutcomeSettings,
} from './decide-outcome.js';
import type { SendResult } from './http-client.js';

const NOW = Date.UTC(2025, 0, 1);
const SCHEDULE = [60_000, 120_000, 300_000];
// random() = 0.5 is no jitter at all: each delay is the schedule's.
const settings: OutcomeSettings = {
  retry: { scheduleMs: SCHEDULE, jitter: 0.1, retryAfterMaxMs: 3_600_000 },
  now: NOW,
  random: () => 0.5,
};
const fresh: AttemptedCall = {
  status: 'pending',
  nextRetryAt: null,
  retriesCount: 0,
  resend: false,
  autoRetry: true,
};
const planned = new Date(NOW + 42_000);
const rescheduled: AttemptedCall = {
  ...fresh,
  status: 'rescheduled',
  nextRetryAt: planned,
  retriesCount: 1,
};

const response = (status: number, headers: Record<string, string> = {}): SendResult => ({
  kind: 'response',
  status,
  headers,
  body: '',
});
const error = (kind: (SendResult & { kind: 'error' })['error']): SendResult => ({
  kind: 'error',
  error: kind,
  reason: `${kind} happened`,
});
const ERRORS = ['timeout', 'reset', 'dns', 'refused', 'error'] as const;

describe('decideOutcome', () => {
  it('succeeds on any 2xx, dropping a retry still planned (a resend of a rescheduled call)', () => {
    const succeeded: Outcome = {
      kind: 'succeeded',
      status: 'success',
      nextRetryAt: null,
      failureReason: null,
    };
    for (const status of [200, 201, 204, 299]) {
      expect(decideOutcome(response(status), fresh, settings)).toEqual(succeeded);
      expect(decideOutcome(response(status), { ...rescheduled, resend: true }, settings)).toEqual(
        succeeded,
      );
    }
  });

  it('fails a 410 Gone for good, whatever the call and the webhook (then disabled)', () => {
    const gone: Outcome = {
      kind: 'gone',
      status: 'failed',
      nextRetryAt: null,
      failureReason: 'HTTP 410',
    };
    expect(decideOutcome(response(410), fresh, settings)).toEqual(gone);
    expect(decideOutcome(response(410), { ...rescheduled, resend: true }, settings)).toEqual(gone);
    expect(decideOutcome(response(410), { ...fresh, autoRetry: false }, settings)).toEqual(gone);
  });

  it('fails an SSRF refusal for good, resends included, saying it is not retried', () => {
    const blocked: SendResult = { kind: 'error', error: 'blocked', reason: '10.0.0.1 is private' };
    const refused: Outcome = {
      kind: 'refused',
      status: 'failed',
      nextRetryAt: null,
      failureReason: '10.0.0.1 is private (refused by the SSRF guard; not retried)',
    };
    expect(decideOutcome(blocked, fresh, settings)).toEqual(refused);
    expect(decideOutcome(blocked, { ...rescheduled, resend: true }, settings)).toEqual(refused);
  });

  it('leaves the automatic plan as it was when a resend fails', () => {
    const resend = { ...rescheduled, resend: true };
    expect(decideOutcome(response(500), resend, settings)).toEqual({
      kind: 'resend-failed',
      status: 'rescheduled',
      nextRetryAt: planned,
      failureReason: 'HTTP 500',
    });
    for (const status of ['failed', 'success', 'pending'] as const) {
      expect(decideOutcome(error('timeout'), { ...fresh, status, resend: true }, settings)).toEqual(
        {
          kind: 'resend-failed',
          status: 'failed',
          nextRetryAt: null,
          failureReason: 'timeout happened',
        },
      );
    }
  });

  it('schedules the next auto retry of any other failure, counting from now', () => {
    for (const result of [response(500), response(404), response(429), ...ERRORS.map(error)]) {
      expect(decideOutcome(result, fresh, settings)).toEqual({
        kind: 'retry',
        status: 'rescheduled',
        retry: 1,
        delayMs: SCHEDULE[0],
        nextRetryAt: new Date(NOW + SCHEDULE[0]!),
        failureReason: result.kind === 'error' ? result.reason : `HTTP ${result.status}`,
      });
    }
    expect(decideOutcome(response(502), rescheduled, settings)).toMatchObject({
      kind: 'retry',
      retry: 2,
      delayMs: SCHEDULE[1],
      nextRetryAt: new Date(NOW + SCHEDULE[1]!),
    });
  });

  it('jitters the delay within the policy', () => {
    const early = decideOutcome(response(500), fresh, { ...settings, random: () => 0 });
    const late = decideOutcome(response(500), fresh, { ...settings, random: () => 1 });
    expect(early).toMatchObject({ kind: 'retry', delayMs: 54_000 });
    expect(late).toMatchObject({ kind: 'retry', delayMs: 66_000 });
  });

  it('lets a 429 or 503 Retry-After push the retry later, never earlier, up to the cap', () => {
    const delay = (result: SendResult) => {
      const outcome = decideOutcome(result, fresh, settings);
      return outcome.kind === 'retry' ? outcome.delayMs : outcome.kind;
    };
    expect(delay(response(429, { 'retry-after': '600' }))).toBe(600_000);
    expect(delay(response(503, { 'retry-after': '1' }))).toBe(SCHEDULE[0]);
    expect(delay(response(503, { 'retry-after': '999999' }))).toBe(3_600_000);
    // An HTTP date counts from the answer's time, not the clock's.
    const date = new Date(NOW + 900_000).toUTCString();
    expect(delay(response(429, { 'retry-after': date }))).toBe(900_000);
    // Only 429 and 503 are read for it.
    expect(delay(response(500, { 'retry-after': '600' }))).toBe(SCHEDULE[0]);
    expect(delay(response(429, { 'retry-after': 'soon' }))).toBe(SCHEDULE[0]);
  });

  it('fails for good once the schedule is used up', () => {
    const last = { ...rescheduled, retriesCount: SCHEDULE.length };
    for (const result of [response(500), error('timeout')]) {
      expect(decideOutcome(result, last, settings)).toEqual({
        kind: 'retries-exhausted',
        status: 'failed',
        nextRetryAt: null,
        failureReason: result.kind === 'error' ? result.reason : 'HTTP 500',
      });
    }
  });

  it('fails for good when the webhook does not retry automatically', () => {
    expect(decideOutcome(response(503), { ...fresh, autoRetry: false }, settings)).toEqual({
      kind: 'not-retried',
      status: 'failed',
      nextRetryAt: null,
      failureReason: 'HTTP 503',
    });
  });

  it('says a redirect is not followed', () => {
    for (const status of [301, 302, 307, 308]) {
      expect(decideOutcome(response(status), fresh, settings)).toMatchObject({
        kind: 'retry',
        failureReason: `HTTP ${status} (redirects are not followed)`,
      });
    }
  });

  it('classifies every result, with a reason exactly when it did not succeed', () => {
    const calls = [fresh, rescheduled, { ...fresh, autoRetry: false }, { ...fresh, resend: true }];
    const results = [
      ...Array.from({ length: 500 }, (_, i) => response(100 + i)),
      ...[...ERRORS, 'blocked' as const].map(error),
    ];
    for (const call of calls) {
      for (const result of results) {
        const outcome = decideOutcome(result, call, settings);
        const ok = result.kind === 'response' && result.status >= 200 && result.status < 300;
        expect(outcome.status === 'success').toBe(ok);
        expect(outcome.failureReason === null).toBe(ok);
        // Only a retry or a kept plan stores a next retry time.
        if (outcome.nextRetryAt !== null)
          expect(['retry', 'resend-failed']).toContain(outcome.kind);
      }
    }
  });
});

describe('statusClass', () => {
  it('is the status hundreds, or the error kind', () => {
    expect(statusClass(response(204))).toBe('2xx');
    expect(statusClass(response(503))).toBe('5xx');
    expect(statusClass(error('timeout'))).toBe('timeout');
  });
});

describe('tripsCircuit', () => {
  it('counts no answer, a 5xx and a 429 toward the circuit; a success, other answers and an SSRF refusal not', () => {
    for (let status = 100; status < 600; status++) {
      expect(tripsCircuit(response(status)), String(status)).toBe(status >= 500 || status === 429);
    }
    for (const kind of ERRORS) expect(tripsCircuit(error(kind)), kind).toBe(true);
    expect(tripsCircuit(error('blocked'))).toBe(false);
  });
});
