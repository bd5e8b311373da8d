import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomId, testRedis, waitFor } from '@herald/testkit';
import { FirstAttempts, type PendingAttempt } from './first-attempts.js';
import { InFlightLimiter } from '../limits/in-flight.js';
import { Semaphore } from '../limits/semaphore.js';

// The worker role queues commands until the connection is up (the producer role fails fast).
const redis = testRedis('worker');
beforeAll(async () => {
  await redis.ping();
});
afterAll(async () => {
  await redis.quit();
});

/** FirstAttempts over a real limiter; attempts wait until `finish` lets them go. */
function setup(poolSize: number, perWebhook: number, waitMs = 0) {
  const limiter = new InFlightLimiter(redis, randomId('herald_test'), perWebhook, 10_000);
  const semaphore = new Semaphore(poolSize);
  const started: string[] = [];
  const deferred: string[] = [];
  const gates = new Map<string, () => void>();
  const answers = new Map<string, () => void>();
  const queued: number[] = [];
  const first = new FirstAttempts<PendingAttempt>({
    semaphore,
    waitMs,
    acquire: (requests) => limiter.acquireMany(requests),
    release: (webhookId, token) => limiter.release(webhookId, token),
    token: (call) => `slot-${call.id}`,
    attempt: (call, answered) => {
      started.push(call.id);
      answers.set(call.id, answered);
      return new Promise<void>((resolve) => gates.set(call.id, resolve));
    },
    defer: (calls) => {
      deferred.push(...calls.map((c) => c.id));
      return Promise.resolve();
    },
    abandon: () => undefined,
    queued: (count) => queued.push(count),
  });
  const finish = (id: string) => gates.get(id)!();
  const answer = (id: string) => answers.get(id)!();
  return { first, started, deferred, finish, answer, semaphore, queued };
}

describe('FirstAttempts (real Redis limiter)', () => {
  it('starts as many calls as the pool has room for, and the next ones as attempts finish', async () => {
    const { first, started, finish, queued } = setup(2, 10);
    first.add(['a', 'b', 'c'].map((id) => ({ id, webhookId: '1' })));
    await waitFor(() => expect(started).toEqual(['a', 'b']));
    expect(first.size).toBe(3);
    expect(queued.at(-1)).toBe(1);
    finish('a');
    await waitFor(() => expect(started).toEqual(['a', 'b', 'c']));
    expect(queued.at(-1)).toBe(0);
    finish('b');
    finish('c');
    await first.drain();
    expect(first.size).toBe(0);
  });

  it('defers a call whose webhook is at its limit, and holds no slot for queued calls', async () => {
    const { first, started, deferred, finish } = setup(10, 1);
    first.add([
      { id: 'x1', webhookId: '7' },
      { id: 'x2', webhookId: '7' },
      { id: 'y1', webhookId: '8' },
    ]);
    await waitFor(() => expect(started.sort()).toEqual(['x1', 'y1']));
    expect(deferred).toEqual(['x2']);
    finish('x1');
    finish('y1');
    await first.drain();
  });

  it('with waitMs, a call over the limit takes the slot an attempt frees here, in order; past waitMs it is deferred', async () => {
    const { first, started, deferred, finish } = setup(10, 1, 400);
    first.add(['w1', 'w2', 'w3'].map((id) => ({ id, webhookId: '9' })));
    await waitFor(() => expect(started).toEqual(['w1']));
    // Waiting calls do not hold up matching (below) but are in size.
    expect(first.size).toBe(3);
    await first.below(2);
    finish('w1');
    await waitFor(() => expect(started).toEqual(['w1', 'w2']));
    expect(deferred).toEqual([]);
    // w2 keeps the slot past w3's waitMs: w3 goes to a deliver job.
    await waitFor(() => expect(deferred).toEqual(['w3']), { timeout: 2000 });
    finish('w2');
    await first.drain();
    expect(first.size).toBe(0);
  });

  it("frees a call's slot when the endpoint answered, before the attempt ends (its outcome's write)", async () => {
    const { first, started, finish, answer } = setup(10, 1, 5000);
    first.add(['s1', 's2'].map((id) => ({ id, webhookId: '11' })));
    await waitFor(() => expect(started).toEqual(['s1']));
    // s1 is still recording its outcome: s2 takes the slot all the same.
    answer('s1');
    await waitFor(() => expect(started).toEqual(['s1', 's2']));
    finish('s1');
    finish('s2');
    await first.drain();
  });

  it('lets matching wait for room below a limit', async () => {
    const { first, finish } = setup(1, 10);
    first.add(['p', 'q'].map((id) => ({ id, webhookId: '3' })));
    let roomy = false;
    const room = first.below(2).then(() => (roomy = true));
    await waitFor(() => expect(first.size).toBe(2));
    expect(roomy).toBe(false);
    await waitFor(() => finish('p'));
    await room;
    await waitFor(() => finish('q'));
    await first.drain();
  });
});
