import { describe, expect, it } from 'vitest';
import { Background } from './background.js';
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

describe('Background', () => {
  it('counts tracked work, waits for room below a limit, and drains', async () => {
    const background = new Background();
    const gates = [gate(), gate(), gate()];
    for (const g of gates) background.track(g.promise);
    expect(background.size).toBe(3);
    let roomy = false;
    const room = background.below(3).then(() => (roomy = true));
    await Promise.resolve();
    expect(roomy).toBe(false);
    gates[0]!.open();
    await room;
    expect(background.size).toBe(2);
    let drained = false;
    const drain = background.drain().then(() => (drained = true));
    gates[1]!.open();
    await Promise.resolve();
    expect(drained).toBe(false);
    gates[2]!.open();
    await drain;
    expect(background.size).toBe(0);
  });

  it('counts work that rejects as finished too', async () => {
    const background = new Background();
    background.track(Promise.reject(new Error('lost')).catch(() => undefined));
    await background.drain();
    expect(background.size).toBe(0);
  });
});
