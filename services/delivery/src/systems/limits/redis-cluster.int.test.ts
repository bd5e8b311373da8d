import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookKey, type RedisCoordination } from '@herald/runtime';
import { startRedisCluster, testClusterCoordination, type RedisCluster } from '@herald/testkit';
import { deliveryCoordination } from './coordination.js';

// Delivery's in-flight slots and rate-limit turns on a Redis Cluster of the file's own (3 masters,
// 3 replicas), asked for by two processes of one deployment (two connections, one prefix). The
// webhooks' keys spread over the masters; each script call keeps to one slot. (The circuits live
// in Postgres: nothing of theirs is in Redis.)

let cluster: RedisCluster;
const processes: { coordination: RedisCoordination; close: () => Promise<void> }[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  const first = await testClusterCoordination(cluster);
  processes.push(first, await testClusterCoordination(cluster, first.coordination.prefix));
});

afterAll(async () => {
  for (const { close } of processes) await close();
  await cluster?.stop();
});

/** Webhook ids whose keys are on three different masters. */
async function webhooksOnEachMaster(): Promise<string[]> {
  const byMaster = new Map<number, string>();
  for (let i = 0; byMaster.size < 3; i++) {
    const id = `hook-${i}`;
    const key = webhookKey(processes[0]!.coordination.prefix, 'in-flight', id);
    const { port } = await cluster.masterOf(key);
    if (!byMaster.has(port)) byMaster.set(port, id);
  }
  return [...byMaster.values()];
}

function both(settings: { maxInFlightPerWebhook: number; slotTtlMs: number }) {
  return processes.map(({ coordination }) => deliveryCoordination(coordination, settings));
}

describe('in-flight slots on a Redis Cluster', () => {
  it('grants at most `limit` per webhook across processes, in one call over every master', async () => {
    const [a, b] = both({ maxInFlightPerWebhook: 2, slotTtlMs: 10_000 });
    const hooks = await webhooksOnEachMaster();
    const asks = hooks.flatMap((webhookId) =>
      ['t1', 't2', 't3'].map((token) => ({ webhookId, token: `${webhookId}:${token}` })),
    );
    expect(await a!.inFlight.acquireMany(asks)).toEqual(hooks.flatMap(() => [true, true, false]));
    expect(await b!.inFlight.acquire(hooks[0]!, 'other')).toBe(false);
    // Releases of several webhooks (several masters) go together; the freed slots are taken again.
    await Promise.all(hooks.map((webhookId) => a!.inFlight.release(webhookId, `${webhookId}:t1`)));
    expect(
      await b!.inFlight.acquireMany(hooks.map((webhookId) => ({ webhookId, token: 'b' }))),
    ).toEqual([true, true, true]);
    expect(await b!.inFlight.acquire(hooks[1]!, 'more')).toBe(false);
  });

  it('never grants more than the limit to concurrent askers of both processes', async () => {
    const [a, b] = both({ maxInFlightPerWebhook: 3, slotTtlMs: 10_000 });
    const taken = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a! : b!).inFlight.acquire('busy', `t${i}`)),
    );
    expect(taken.filter(Boolean)).toHaveLength(3);
  });
});

describe('rate-limit turns on a Redis Cluster', () => {
  it("spaces a webhook's requests across processes, its two keys in one slot", async () => {
    const [a, b] = both({ maxInFlightPerWebhook: 10, slotTtlMs: 10_000 });
    const hooks = await webhooksOnEachMaster();
    for (const webhookId of hooks) {
      // 2 per second: one request now (its slot reserved), the next waits about half a second
      // for a turn (further than the 300 ms it may reserve ahead).
      const first = await a!.rateTurns.admit(webhookId, 2, false, 300_000);
      expect(first.waitUs).toBe(0);
      expect(first.slotUs).not.toBeNull();
      const second = await b!.rateTurns.admit(webhookId, 2, false, 300_000);
      expect(second.slotUs).toBeNull();
      expect(second.waitUs).toBeGreaterThan(300_000);
      expect(second.waitUs).toBeLessThan(600_000);
      // A third waits behind the second's turn.
      const third = await a!.rateTurns.admit(webhookId, 2, false, 300_000);
      expect(third.waitUs).toBeGreaterThan(second.waitUs + 300_000);
      // The first started late: the next may go no sooner than a second after its slot.
      await b!.rateTurns.started(webhookId, first.slotUs! + 1_000_000);
      const turn = await b!.rateTurns.admit(webhookId, 2, true, 300_000);
      expect(turn.slotUs).toBeNull();
      expect(turn.waitUs).toBeGreaterThan(600_000);
    }
  });
});
