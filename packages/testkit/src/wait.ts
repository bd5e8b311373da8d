import { vi } from 'vitest';

/**
 * How long a test waits for something to happen before it fails. vitest's default (1 s) is a
 * deadline for a quiet machine; the test command must hold on one busy with other work, where a
 * match or a delivery that takes 20 ms alone can take seconds. A test waits for the event, never
 * for the time, so a long deadline costs nothing when the machine is quick.
 */
export const WAIT_TIMEOUT_MS = 20_000;

/**
 * vi.waitFor with WAIT_TIMEOUT_MS (and a 50 ms interval) unless `options` says otherwise (a
 * number: the timeout, as vi.waitFor takes it).
 */
export function waitFor<T>(
  callback: () => T | Promise<T>,
  options: number | { timeout?: number; interval?: number } = {},
): Promise<T> {
  const given = typeof options === 'number' ? { timeout: options } : options;
  return vi.waitFor(callback, { timeout: WAIT_TIMEOUT_MS, interval: 50, ...given });
}
