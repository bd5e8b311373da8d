import { describe, it } from 'vitest';
import { FAULT_TIMEOUT_MS, expectPassed } from './harness.test-support.js';
import {
  killAndRestart,
  processFaults,
  redisFaults,
  useFaultInfrastructure,
} from './cases.test-support.js';

// The fault-injection suite (docs/reliability.md): under a steady load of events to a real
// receiver, each fault is injected into built Herald processes running on a Postgres cluster and
// a Redis server of the suite's own; then no accepted event may be lost, duplicates come only
// from calls in flight when something crashed, no process crashes but the one killed, and the
// last delivery comes at most RECOVERY_LIMIT_S after the fault's end. A table of the figures is
// printed at the end and written to .ci/out/faults.md. The many-process configuration is in
// many.int.test.ts, a file of its own so that it runs beside this one.

const fault = useFaultInfrastructure({ section: 'split', replica: false });

// Each fault starts its processes afresh, loads, injects, waits for the last delivery: about
// 15–30 s when Herald recovers, up to about 90 s when it does not.
describe('fault injection', { timeout: FAULT_TIMEOUT_MS }, () => {
  // The faults that do not need Redis, in both modes: Redis (REDIS_URL) and Postgres alone
  // (REDIS_URL unset: the queues, slots, limits and channel in Postgres), with the same criteria.
  // Postgres down stops it immediately: the crash recovery empties the coordination's UNLOGGED
  // tables, Postgres alone's counterpart of a Redis that lost its keys. The faults after the loop
  // are Redis's own: on Postgres alone nothing is left to flush or stop, and a deployment on
  // another database has its queues in that database, so it cannot take another's prefix.
  for (const mode of ['redis', 'postgres'] as const) {
    const suffix = mode === 'redis' ? '' : ', Postgres only';
    const modeEnv: Record<string, string> = mode === 'redis' ? {} : { REDIS_URL: '' };

    processFaults(fault, 'split', mode, suffix);

    // The single process on its embedded PostgreSQL: the kill leaves the server running on its own;
    // the restart stops it and starts it again on the same data.
    it(`kill -9 of the single process on the embedded PostgreSQL${suffix}`, async () => {
      const row = await fault(
        `kill -9 single process (embedded PostgreSQL)${suffix}`,
        'standalone',
        killAndRestart('standalone'),
        modeEnv,
      );
      expectPassed(row);
    });
  }

  redisFaults(fault, 'split', '');
});
