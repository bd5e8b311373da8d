import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import { QUEUE_WEBHOOK_DELIVER } from '@herald/contract';
import { queuePrefix } from '@herald/runtime';
import {
  FAULT_TIMEOUT_MS,
  IN_FLIGHT_PER_WEBHOOK,
  expectPassed,
  type Scenario,
} from './harness.test-support.js';
import { processFaults, redisFaults, useFaultInfrastructure } from './cases.test-support.js';
import { PrivateRedisCluster } from './servers.test-support.js';
import { waitUntil } from '@herald/testkit';

// The fault suite's many-process configuration (docs/reliability.md): 2 ingest, 2 read and 3
// delivery processes behind a gateway, on a Redis Cluster (3 masters, 3 replicas:
// REDIS_CLUSTER_NODES), the read processes on a streaming replica of the file's Postgres
// (READ_DATABASE_URL). Every fault of the split stack on Redis, with the same criteria (on the
// cluster, "Redis down" is every node killed and the cluster made again, a FLUSHALL goes to
// every master), then a master killed (its replica takes over), the replica stopped and one of
// the three delivery processes killed for good. A file of its own, run after faults.int.test.ts.
// The cluster is started once for the file (about 7 s): each fault has a prefix of its own.

let redis: PrivateRedisCluster;
const fault = useFaultInfrastructure({
  section: 'many',
  replica: true,
  redis: async () => (redis = await PrivateRedisCluster.create()),
});
const SUFFIX = ', many processes';
/** Reads answered while the replica is stopped before it starts again. */
const READS_WITHOUT_REPLICA = 5;

/** What GET /items answered while watched: each status, or the error's code. */
function watchReads(scenario: Scenario) {
  let stopped = false;
  const outcomes: { at: number; outcome: string }[] = [];
  const polling = (async () => {
    while (!stopped) {
      const outcome = await fetch(`${scenario.entryUrl}/items?page[limit]=5`, {
        headers: { authorization: `Bearer ${scenario.token}` },
        signal: AbortSignal.timeout(15_000),
      }).then(
        async (response) => {
          await response.arrayBuffer();
          return String(response.status);
        },
        (error: Error) => error.name,
      );
      outcomes.push({ at: Date.now(), outcome });
      // Half the load's pace: reads beside the writes, not a second load.
      await sleep(2000 / scenario.load.ratePerS);
    }
  })();
  return {
    /** Reads answered 200 since `at`. */
    answeredSince: (at: number): number =>
      outcomes.filter((o) => o.at >= at && o.outcome === '200').length,
    async stop() {
      stopped = true;
      await polling;
      return outcomes;
    },
  };
}

describe('fault injection, many processes', { timeout: FAULT_TIMEOUT_MS }, () => {
  processFaults(fault, 'many', 'redis', SUFFIX);
  redisFaults(fault, 'many', SUFFIX);

  it("a Redis master killed: the queues' master, under load; its replica takes over", async () => {
    const row = await fault(
      `Redis master killed (failover to its replica)${SUFFIX}`,
      'many',
      async (s) => {
        // Both queues are in the slot of the prefix's hash tag: the master every job is on.
        const key = `${queuePrefix(s.prefix)}:${QUEUE_WEBHOOK_DELIVER}`;
        const killedAt = Date.now();
        const victim = await redis.cluster.failOver(key);
        const promoted = await redis.cluster.masterOf(key);
        s.mark(
          `master :${victim.port} killed (kill -9); :${promoted.port} took its slots in ` +
            `${Date.now() - killedAt} ms`,
        );
        // The replica is replicated asynchronously: a job's last moves (to active, its lock) may
        // not have reached it, and a job running at the kill may run again.
        s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
        // The fault ends with the failover; the killed node comes back as a replica after.
        s.faultEnded();
        await redis.cluster.restartNode(victim);
        s.mark(`:${victim.port} back, a replica of :${promoted.port}`);
      },
    );
    expectPassed(row);
  });

  it('the replica stopped: reads go to the primary, never a 5xx, during and after', async () => {
    const row = await fault(`replica stopped${SUFFIX}`, 'many', async (s) => {
      const replica = s.infra.replica!;
      const reads = watchReads(s);
      const from = Date.now();
      if (!(await waitUntil(() => reads.answeredSince(from) > 0, 30_000))) {
        s.problems.push('GET /items never answered 200 before the fault');
      }
      await replica.stop('immediate');
      const stoppedAt = Date.now();
      s.mark('replica stopped (pg_ctl stop -m immediate)');
      // Down until enough reads were answered without it: each went to the replica first.
      const answered = await waitUntil(
        () => reads.answeredSince(stoppedAt) >= READS_WITHOUT_REPLICA,
        30_000,
      );
      if (!answered) {
        s.problems.push(
          `only ${reads.answeredSince(stoppedAt)} reads answered 200 in 30 s without the replica`,
        );
      }
      await replica.start();
      s.faultEnded();
      s.afterLoad(async () => {
        const outcomes = await reads.stop();
        const during = outcomes.filter((o) => o.at >= stoppedAt);
        const bad: Record<string, number> = {};
        for (const { outcome } of outcomes) {
          if (outcome !== '200') bad[outcome] = (bad[outcome] ?? 0) + 1;
        }
        s.mark(`GET /items: ${outcomes.length} reads, ${during.length} from the replica's stop on`);
        if (Object.keys(bad).length > 0) {
          s.problems.push(`GET /items answered other than 200: ${JSON.stringify(bad)}`);
        }
      });
    });
    expectPassed(row);
  });

  it('one of three delivery processes killed: the other two take its calls', async () => {
    const row = await fault(`one of 3 delivery processes killed${SUFFIX}`, 'many', async (s) => {
      await s.kill('delivery');
      // Not started again: its leased calls and its BullMQ jobs are the others' to take.
      s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
      s.faultEnded();
    });
    expectPassed(row);
  });
});
