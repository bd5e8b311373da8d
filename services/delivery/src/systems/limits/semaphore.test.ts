import { describe, expect, it } from 'vitest';
import { Semaphore } from './semaphore.js';

/** A promise and the function that settles it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('Semaphore', () => {
  it('runs at most `size` tasks at once, the others in arrival order as slots free', async () => {
    const semaphore = new Semaphore(2);
    const gates = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const done = gates.map((g, i) =>
      semaphore.run(async () => {
        started.push(i);
        await g.promise;
        return i;
      }),
    );
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    gates[1]!.open();
    await done[1];
    await Promise.resolve();
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.open();
    gates[2]!.open();
    gates[3]!.open();
    expect(await Promise.all(done)).toEqual([0, 1, 2, 3]);
    expect(started).toEqual([0, 1, 2, 3]);
  });

  it('frees the slot of a task that throws', async () => {
    const semaphore = new Semaphore(1);
    await expect(semaphore.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(semaphore.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });
});

describe('Semaphore: take and give', () => {
  it('takes only free slots, hands a freed slot to a waiter of run() first, then tells listeners', async () => {
    const semaphore = new Semaphore(3);
    let freed = 0;
    semaphore.onFree(() => freed++);
    expect(semaphore.take(2)).toBe(2);
    expect(semaphore.take(5)).toBe(1);
    expect(semaphore.take(1)).toBe(0);
    let ran = false;
    const waiting = semaphore.run(() => Promise.resolve((ran = true)));
    semaphore.give(); // to the waiter, not the pool
    await waiting;
    expect(ran).toBe(true);
    expect(freed).toBe(1); // the waiter's slot came back when it finished
    expect(semaphore.take(5)).toBe(1);
  });
});
